"""The fixed-loss state of a task by integrating its reduced ODE (numerics.task_state)."""
import numpy as np
import pytest

from numerics.closed_form import state_at_loss, time_to_loss
from numerics.task_state import task_state_at_loss


@pytest.mark.parametrize("ratio", [0.01, 1.0, 100.0])
@pytest.mark.parametrize("loss", [2.0, 0.1, 1e-4])
def test_paper_matches_closed_form(ratio, loss):
    # independent: closed form = Newton on the first integral (numerics.closed_form)
    st = task_state_at_loss("paper", ratio, loss)
    cf = state_at_loss(loss, ratio)
    for key in ("mu_OV", "mu_QK", "alpha"):
        assert st[key] == pytest.approx(float(getattr(cf, key)), rel=1e-9, abs=0)
    assert st["t"] == pytest.approx(float(time_to_loss(loss, ratio)), rel=1e-9)
    assert st["loss"] == pytest.approx(loss, rel=1e-12)


def test_paper_other_parameters():
    st = task_state_at_loss("paper", 3.0, 0.3, m=2, n=20, b=10, M=5)
    cf = state_at_loss(0.3, 3.0, m=2, n=20, b=10, M=5)
    assert st["alpha"] == pytest.approx(float(cf.alpha), rel=1e-9)
    assert set(st["coordinates"]) == {"mu_OV", "mu_QK"}


@pytest.mark.parametrize("args, kwargs, match", [
    (("nope", 1.0, 0.5), {}, "unknown task"),
    (("paper", 0.0, 0.5), {}, "ratio"),
    (("paper", 1.0, 3.5), {}, "loss"),          # >= log 20
    (("paper", 1.0, 0.5), {"n_c": 2}, "n_c"),    # the paper task has no n_c
    (("paper", 1.0, 0.5), {"M": 2.5}, "M"),
    (("authors", 1.0, 0.5), {}, "authors"),      # numeric-only task: not reduced symbolically
])
def test_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        task_state_at_loss(*args, **kwargs)


def test_shared_irrelevant_is_the_paper_with_a_faster_qk_rate():
    # the shared one-hot irrelevant types also learn their score: the engine maps the task to the
    # paper with eta_QK -> eta_QK (n_c + 1) / n_c; the paper's closed form is the independent side
    st = task_state_at_loss("shared-irrelevant", 2.0, 0.2, n_c=3)
    cf = state_at_loss(0.2, 2.0 * 4 / 3)
    assert st["alpha"] == pytest.approx(float(cf.alpha), rel=1e-9)
    assert st["mu_QK"] == pytest.approx(float(cf.mu_QK), rel=1e-9)


def test_query_in_context_matches_full_matrix_flow():
    from numerics.task_model import TaskModel, instance_of_task, task_gradient_flow
    st = task_state_at_loss("query-in-context", 3.0, 0.5, M=4)
    model = TaskModel(instance_of_task("query-in-context", M=4), "CACO", eta_QK=3.0, eta_OV=1.0)
    res = task_gradient_flow(model, model.init_params("zero"), target_loss=0.5, rtol=1e-11,
                             atol=1e-13)
    c = res.crossings[0.5]
    assert c["alpha"] == pytest.approx(st["alpha"], rel=1e-8)
    assert c["t"] == pytest.approx(st["t"], rel=1e-8)
