"""The run-time lambdified flow of an engine task (LambdifiedFlow) in float64 against the same
expressions in mpmath at 50 digits: relative error within 1e-13 at losses down to 1e-14 and at scores
where the relevant attention is 1 to double precision (``benchmarks/float_precision.py`` measures
the whole grid)."""
import pathlib

import mpmath
import pytest

from numerics.dynamics.task_systems import reduced_flow, task_parameters
from numerics.functions.numeric_function import numeric

TOL = 1e-13
TASK_FILE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "examples" / "query-copies-file.toml"


def relative_error(x, ref):
    return abs(mpmath.mpf(x) - ref) / abs(ref)


def mp_functions(flow):
    args = tuple(flow.coords) + tuple(flow.params)
    return tuple(numeric(e, args, "mpmath", stable=False).func for e in (flow.loss, flow.alpha, tuple(flow.rhs)))


def worst_error(task, scores, targets, **params):
    """The largest relative error of the CACO flow's loss, alpha and right-hand side of ``task`` at
    mu_QK in ``scores`` (the other coordinates 0) and mu_OV solved for each loss in ``targets``."""
    flow = reduced_flow(task, "CACO")
    values = dict(task_parameters(task, **params), eta_QK=2.0, eta_OV=1.0)
    pv = tuple(float(values[p]) for p in flow.param_names)
    mp_loss, mp_alpha, mp_rhs = mp_functions(flow)
    worst = 0.0
    with mpmath.workdps(50):
        for score in scores:
            for target in targets:
                y = {name: 0.0 for name in flow.names}
                y["mu_QK"] = score
                alpha = mp_alpha(*(mpmath.mpf(y[k]) for k in flow.names), *map(mpmath.mpf, pv))
                margin = mpmath.log(values["M"] - 1) - mpmath.log(mpmath.expm1(target))
                y["mu_OV"] = float(margin / alpha)
                point = [y[k] for k in flow.names]
                mp_point = [mpmath.mpf(v) for v in point] + [mpmath.mpf(v) for v in pv]
                worst = max(worst, relative_error(flow._L(*point, *pv), mp_loss(*mp_point)),
                            relative_error(flow._a(*point, *pv), mp_alpha(*mp_point)),
                            *(relative_error(v, r) for v, r in zip(flow._f(*point, *pv), mp_rhs(*mp_point))
                              if r != 0))
    return worst


@pytest.mark.parametrize("task", ["paper", "query-copies"])
def test_loss_alpha_and_rhs_keep_relative_precision(task):
    # at mu_QK = 40 the relevant share is 1 - 1e-17: 1 - alpha must not be computed as a difference
    assert worst_error(task, (0.0, 10.0, 40.0), (1e-2, 1e-8, 1e-14)) <= TOL


@pytest.mark.slow
@pytest.mark.parametrize("task", ["paper", "shared-irrelevant", "query-in-context",
                                  "shared-irrelevant+query-in-context", "query-copies", str(TASK_FILE)])
@pytest.mark.parametrize("params", [{}, {"m": 1e-100}, {"m": 1e100}, {"n": 1e100}, {"b": 1e100}, {"M": 2},
                                    {"M": 10**6}])
def test_every_task_keeps_relative_precision(task, params):
    # m, n and b at opposite extremes together (m = b = 1e100, n = 1e-100) put the rates of
    # the query-copy scores near 1e-290, below what b**2 * (m e^u + n)**2 leaves of them: not here
    assert worst_error(task, (-30.0, -1.0, 0.0, 1.0, 10.0, 40.0), tuple(10.0 ** -k for k in range(2, 15)),
                       **params) <= TOL


def test_alpha_is_finite_where_the_score_overflows():
    flow = reduced_flow("paper", "CACO")
    values = dict(task_parameters("paper"), eta_QK=1.0, eta_OV=1.0)
    pv = tuple(float(values[p]) for p in flow.param_names)
    point = {"mu_QK": 800.0, "mu_OV": 5.0}
    assert flow._a(*(point[k] for k in flow.names), *pv) == 1.0
