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


def test_descent_crossings_are_the_first_steps_at_or_below_each_level():
    """Brute force over the recorded steps (every one): each threshold's crossing is the first step whose loss
    is <= it, reported at t = step x lr, with that step's parameters (a plain descent stopped at that step)."""
    import numpy as np
    from numerics.dynamics import gradient_descent
    model = AttentionModel("CACO", M=3, m=2, n=5, b=2, eta_OV=5.0)
    p0, lr = structured_params(model), 0.1
    gd = gradient_descent(model, p0, lr, 1000, loss_thresholds=(0.8, 0.5), target_loss=0.2)
    assert gd.status == 1 and np.array_equal(gd.step, np.arange(gd.step.size))
    for level, hit in zip((0.8, 0.5), gd.crossings):
        k = int(np.argmax(gd.loss <= level))
        assert gd.loss[k] <= level < gd.loss[k - 1]
        assert hit["t"] == pytest.approx(k * lr, rel=1e-15, abs=0) and hit["loss"] == gd.loss[k]
        alone = gradient_descent(model, p0, lr, k).params
        assert all(np.array_equal(hit["params"][key], alone[key]) for key in alone)


def test_output_times_outside_the_interval_are_refused_with_both():
    """The message said only "t_eval must lie within t_span": it names both, the interval and the times."""
    model = AttentionModel("CACO", M=3)
    p0 = structured_params(model)
    with pytest.raises(ValueError, match=r"^t_eval must lie within t_span = \(0\.0, 1\.0\); "
                                         r"got times from 0\.0 to 2\.0$"):
        gradient_flow(model, p0, t_eval=[0.0, 2.0], t_span=(0.0, 1.0))
