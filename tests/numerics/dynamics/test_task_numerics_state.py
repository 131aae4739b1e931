"""The fixed-loss state of a task by integrating its reduced ODE
(numerics.dynamics.state_at_loss with method="reduced flow")."""
import numpy as np
import pytest

from numerics.dynamics import state_at_loss as entry
from numerics.dynamics.closed_form import state_at_loss, time_to_loss


def task_state_at_loss(task, ratio, loss, **params):
    """The reduced-flow state of ``task`` at one loss (floats in a dict)."""
    st = entry(loss, ratio, task=task, method="reduced flow", **params)
    coords = {k: float(v) for k, v in st.coordinates.items()}
    return {**coords, "alpha": float(st.alpha), "t": float(st.time), "loss": float(st.loss),
            "coordinates": coords}


@pytest.mark.parametrize("ratio", [0.01, 1.0, 100.0])
@pytest.mark.parametrize("loss", [2.0, 0.1, 1e-4])
def test_paper_matches_closed_form(ratio, loss):
    # independent: closed form = Newton on the first integral (numerics.dynamics.closed_form)
    st = task_state_at_loss("paper", ratio, loss)
    cf = state_at_loss(loss, ratio)
    for key in ("mu_OV", "mu_QK", "alpha"):
        assert st[key] == pytest.approx(float(getattr(cf, key)), rel=1e-9, abs=0)
    assert st["t"] == pytest.approx(float(time_to_loss(loss, ratio)), rel=1e-9)
    assert st["loss"] == pytest.approx(loss, rel=1e-12, abs=0)


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


@pytest.mark.parametrize("task, P, match", [
    ([], "CACO", r"^unknown task \[\]; valid tasks: paper"), ({}, "CACO", r"^unknown task"),
    ("paper", [], r"^parameterization must be one of CACO, CAFO, FACO, FAFO; got \[\]"),
])
@pytest.mark.parametrize("which", ["reduced_flow", "family_system"])
def test_the_engine_systems_name_an_unhashable_task_or_parameterization(task, P, match, which):
    """The cache's TypeError (unhashable type: 'list') came first."""
    import numerics.dynamics
    with pytest.raises(ValueError, match=match):
        getattr(numerics.dynamics, which)(task, P)


def test_shared_irrelevant_is_the_paper_with_a_faster_qk_rate():
    # the shared one-hot irrelevant types also learn their score: the engine maps the task to the
    # paper with eta_QK -> eta_QK (n_c + 1) / n_c; the paper's closed form is the independent side
    st = task_state_at_loss("shared-irrelevant", 2.0, 0.2, n_c=3)
    cf = state_at_loss(0.2, 2.0 * 4 / 3)
    assert st["alpha"] == pytest.approx(float(cf.alpha), rel=1e-9)
    assert st["mu_QK"] == pytest.approx(float(cf.mu_QK), rel=1e-9)


def test_query_in_context_matches_full_matrix_flow():
    from numerics.dynamics import gradient_flow
    from numerics.model import TaskModel, instance_of_task
    st = task_state_at_loss("query-in-context", 3.0, 0.5, M=4)
    model = TaskModel(instance_of_task("query-in-context", M=4), "CACO", eta_QK=3.0, eta_OV=1.0)
    res = gradient_flow(model, model.init_params("zero"), t_span=(0.0, np.inf), target_loss=0.5,
                        rtol=1e-11, atol=1e-13, log_events=True)
    c = res.target_state
    assert c["alpha"] == pytest.approx(st["alpha"], rel=1e-8)
    assert c["t"] == pytest.approx(st["t"], rel=1e-8)


# --------------------------------------------------------------------------- #
# one entry point, one result type (numerics.dynamics.state_at_loss)
# --------------------------------------------------------------------------- #
import itertools  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import warnings  # noqa: E402

from numerics.dynamics import REDUCED_FLOW_RANGE, StateAtLoss  # noqa: E402

TASKS = ("paper", "shared-irrelevant", "query-in-context")


def test_entry_says_which_method_answered():
    paper = entry(0.1, 10.0)
    assert isinstance(paper, StateAtLoss) and paper.method == "closed form"
    mu_OV, mu_QK, alpha, *_ = paper                       # unpacks by position
    assert float(alpha) == float(state_at_loss(0.1, 10.0).alpha)
    mapped = entry(0.1, 10.0, task="shared-irrelevant", n_c=5)
    assert mapped.method == "closed form" and float(mapped.mapped_ratio) == 12.0
    assert float(mapped.ratio) == 10.0
    flow = entry(0.1, 10.0, task="shared-irrelevant", n_c=5, method="reduced flow")
    assert flow.method == "reduced flow" and flow.time > 0
    # independent: the same task by its reduced ODE vs the paper's closed form at the mapped ratio
    assert float(flow.alpha) == pytest.approx(float(mapped.alpha), rel=1e-9)
    other = entry([0.5, 0.1], 3.0, task="query-in-context")
    assert other.method == "reduced flow" and other.alpha.shape == (2,)
    assert set(other.coordinates) == {"mu_QK_q", "mu_QK", "mu_OV_q", "mu_OV"}
    single = task_state_at_loss("query-in-context", 3.0, 0.1)
    assert single["alpha"] == float(other.alpha[1]) and single["t"] == float(other.time[1])


def test_entry_factorized_paper_is_its_orbit_and_other_tasks_refuse():
    from numerics.dynamics import ReducedSystem
    st = entry(0.1, 3.0, parameterization="FAFO")
    ref = ReducedSystem("FAFO", eta_QK=3.0).integrate(target_loss=0.1, rtol=1e-12)
    assert float(st.alpha) == pytest.approx(ref.target_state["alpha"], rel=1e-8)
    with pytest.raises(ValueError, match="collapsed circuits"):
        entry(0.1, 3.0, task="query-in-context", parameterization="FAFO")
    with pytest.raises(ValueError, match="collapsed circuits"):      # the paper's orbit is no reduced flow
        entry(0.1, 3.0, parameterization="FAFO", method="reduced flow")
    with pytest.raises(ValueError, match="no closed-form state"):
        entry(0.1, 3.0, task="query-in-context", method="closed form")
    with pytest.raises(ValueError, match="method must be one of"):
        entry(0.1, 3.0, method="bisection")


@pytest.mark.parametrize("P", ["CAFO", "FACO", "FAFO"])
@pytest.mark.parametrize("ratio, shown", [(0.0, "0"), (-2.0, "-2"), (math.nan, "nan"), ([1.0, math.inf], "inf")])
def test_the_paper_orbits_name_the_ratio_the_caller_gave(P, ratio, shown):
    """state_at_loss of a factorized parameterization passed the ratio on as eta_QK, and a ratio that is not
    finite and > 0 was refused as "eta_QK must be a finite number > 0": the message names ``ratio`` and the
    range the factorized state is tested on."""
    with pytest.raises(ValueError) as info:
        entry(0.5, ratio, parameterization=P)
    assert str(info.value) == (f"ratio must be in (0, 1e+12] for the closed-form state of {P} "
                               f"(the range it is tested on); got {shown}")


def test_closed_form_answers_tiny_losses_for_mapped_tasks_the_flow_refuses_them():
    st = entry(1e-300, 10.0, task="shared-irrelevant", n_c=3)
    assert float(st.alpha) == float(state_at_loss(1e-300, 10.0 * 4 / 3).alpha)
    with pytest.raises(ValueError, match=r"loss must be in \[1e-08, 2.99573227355399\d*\) .*"
                                         r"'query-in-context'.*got 1e-16"):
        entry(1e-16, 10.0, task="query-in-context")


def _no_warnings(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("kwargs, match", [
    (dict(ratio=10.0, loss=1e-16), r"loss must be in \[1e-08, .*\) for the reduced-flow state"),
    (dict(ratio=1e300, loss=0.1), r"ratio must be in \[0.0001, 10000\] .*got 1e\+300"),
    (dict(ratio=10.0, loss=0.1, M=10**7), r"M must be in \[2, 1e\+06\] .*got 10000000"),
    (dict(ratio=10.0, loss=0.1, m=1e300), r"m must be in \[0.001, 1000\] .*got 1e\+300"),
    (dict(ratio=10.0, loss=0.1, b=1e-300), r"b must be in \[0.1, 1000\] .*got 1e-300"),
])
def test_task_state_refuses_the_same_way_for_every_task(task, kwargs, match):
    """Issue 15 item 13: one ValueError naming the range, the same for every task;
    no 'math domain error', no RuntimeWarning, no OverflowError."""
    kwargs = dict(kwargs)
    ratio, loss = kwargs.pop("ratio"), kwargs.pop("loss")
    with pytest.raises(ValueError, match=match) as info:
        _no_warnings(lambda: task_state_at_loss(task, ratio, loss, **kwargs))
    assert f"task {task!r}" in str(info.value) and "np.float64" not in str(info.value)


def test_mapped_ratio_is_never_named_and_no_numpy_reprs():
    for ratio in (1e12, np.float64(1e12), 1e300):
        with pytest.raises(ValueError) as info:
            _no_warnings(lambda: entry(0.1, ratio, task="shared-irrelevant"))
        text = str(info.value)
        assert re.search(r"ratio must be in \[5e-13, 5e\+11\]", text), text
        assert f"got {float(ratio):.15g}" in text and "2000000000000" not in text
        assert "np.float64" not in text
    with pytest.raises(ValueError) as info:
        state_at_loss(0.5, np.float64(1e30))                 # the closed form itself
    assert "np.float64" not in str(info.value) and "got 1e+30" in str(info.value)
    with pytest.raises(ValueError) as info:
        entry(0.1, 10.0, task="shared-irrelevant", M=2**60)
    assert "got 1152921504606846976" in str(info.value)


def _corners(quick):
    lo_hi = {k: REDUCED_FLOW_RANGE[k] for k in ("m", "n", "b", "ratio")}
    keys = list(lo_hi)
    combos = itertools.product(*(lo_hi[k] for k in keys), (2, REDUCED_FLOW_RANGE["M"][1]),
                               ("low", "high"))
    cases = [dict(zip(keys + ["M", "loss"], c)) for c in combos]
    return cases[::9] if quick else cases


def _check_corner(case):
    loss = REDUCED_FLOW_RANGE["loss"][0] if case["loss"] == "low" else 0.999 * math.log(case["M"])
    kw = {k: case[k] for k in ("m", "n", "b", "M")}
    st = _no_warnings(lambda: task_state_at_loss("paper", case["ratio"], loss, **kw))
    cf = state_at_loss(loss, case["ratio"], **kw)           # independent: the closed form
    assert st["alpha"] == pytest.approx(float(cf.alpha), rel=1e-8, abs=0)
    assert st["mu_OV"] == pytest.approx(float(cf.mu_OV), rel=1e-8, abs=0)
    assert abs(st["mu_QK"] - float(cf.mu_QK)) <= 1e-8 * max(1.0, abs(float(cf.mu_QK)))


@pytest.mark.parametrize("case", _corners(quick=True))
def test_reduced_flow_range_corners_quick(case):
    _check_corner(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", _corners(quick=False))
def test_reduced_flow_range_every_corner(case):
    _check_corner(case)


@pytest.mark.parametrize("kw", [dict(rtol=-1.0), dict(rtol=math.nan), dict(atol=0.0), dict(atol="1e-14"),
                                dict(rtol=None)])
@pytest.mark.parametrize("method", [None, "closed form"])
def test_tolerances_are_checked_whichever_method_answers(kw, method):
    """A bad tolerance is never silently ignored because the closed form answers."""
    name = next(iter(kw))
    with pytest.raises(ValueError, match=f"^{name} must be a finite number > 0"):
        entry(0.5, 1.0, method=method, **kw)


def test_no_task_parameter_can_take_the_name_of_a_keyword_of_the_functions_that_take_parameters():
    """The functions that take a task's parameter values as keywords beside their own: a task file's parameter
    named as one of their keywords ("task", "ratio", "xtol") would be taken for it (a TypeError traceback, or
    silently the function's tolerance); the engine refuses every such name when a task declares it."""
    import inspect

    from derivations.engine.checks import _check_parameter_name
    from numerics.dynamics import (ReducedSystem, boundary, crossover_lambda, master_lambda, master_shares,
                                   task_shape)
    from numerics.dynamics.task_systems import task_parameters
    taken = []
    for f in (entry, master_lambda, master_shares, crossover_lambda, boundary, task_shape, task_parameters,
              ReducedSystem.__init__):
        for name, p in inspect.signature(f).parameters.items():
            if p.kind is not p.VAR_KEYWORD and name != "self":
                try:
                    _check_parameter_name("t", name)
                except ValueError:
                    taken.append(name)
                else:
                    pytest.fail(f"{f.__qualname__}: a task parameter may be called {name!r}")
    assert {"task", "ratio", "loss", "xtol", "lam"} <= set(taken)


@pytest.mark.parametrize("values", [{"s": 2}, {"s": 2, "m": 0.5}])
def test_values_that_leave_the_relevant_group_without_copies_are_refused_naming_them(tmp_path, values):
    """A relevant multiplicity ``m*(2 - s)**2`` is positive for s = 1 (the file is valid) but 0 at s = 2: the
    reduced flow's attention divided by it (a ZeroDivisionError traceback from state_at_loss, and so from
    print_dynamics --loss, predict and the sweep's theory). Such values are refused, naming them."""
    path = tmp_path / "vanishing.toml"
    path.write_text('name = "vanishing"\nquery = "q"\nquery_in_context = true\n[parameters]\ns = 1\n'
                    '[[groups]]\nname = "q"\nper_class = true\nmultiplicity = "s - 1"\n'
                    '[[groups]]\nname = "r"\nper_class = true\nmultiplicity = "m*(2 - s)**2"\n'
                    '[[groups]]\nname = "z"\nper_class = false\nembedded = false\nmultiplicity = "n"\n')
    from numerics.dynamics.task_systems import task_parameters
    assert task_parameters(str(path), M=4, b=2, n=10, s=3)["s"] == 3             # (2 - 3)**2 = 1 copy per m
    shown = ", ".join(f"{k}={v}" for k, v in sorted({"m": 5, **values}.items()) if k in ("m", "s"))
    with pytest.raises(ValueError, match=rf"^task 'vanishing': at {shown} the relevant group 'r' has no copies "
                                         r"in its class's context \(multiplicity m\*\(2 - s\)\*\*2 = 0\)"):
        entry(0.5, 2.0, task=str(path), M=4, b=2, n=10, **values)
