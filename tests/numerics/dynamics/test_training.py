"""Input checks of gradient_flow and gradient_descent (numerics/dynamics/training.py)."""
from __future__ import annotations

import math

import pytest

from numerics.dynamics import gradient_flow
from numerics.model import AttentionModel, structured_params


@pytest.mark.parametrize("bad", [-1.0, 0.0, math.nan, -math.inf, "1", None, True])
def test_max_step_must_be_positive(bad):
    """Never SciPy's message (negative, zero) nor a silently unbounded step (nan): max_step is named."""
    model = AttentionModel("CACO", M=3)
    with pytest.raises(ValueError, match=r"^max_step must be a number > 0"):
        gradient_flow(model, structured_params(model), [0.0, 1.0], max_step=bad)
