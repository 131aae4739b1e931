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


def test_the_reason_the_full_flow_ended():
    """The full model's flow says in one word why it ended: the target, the span's end, the budget,
    or a value that became non-finite (a gradient scaled to overflow)."""
    model = AttentionModel("CACO", M=3)
    p0 = structured_params(model)
    assert gradient_flow(model, p0, target_loss=0.5, t_span=(0.0, math.inf)).reason == "terminal"
    assert gradient_flow(model, p0, [0.0, 1.0]).reason == "end"
    assert gradient_flow(model, p0, t_span=(0.0, 1e9), max_steps=5).reason == "steps"
    blown = AttentionModel("CACO", M=3, eta_OV=1e308)
    run = gradient_flow(blown, structured_params(blown), [0.0, 1.0])
    assert run.status == -1 and run.reason in ("nonfinite", "failed")
