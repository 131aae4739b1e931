"""solve_reduced: first integrals, crossings vs closed forms, validation."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from derivations.core import PARAMETERIZATIONS
from numerics.dynamics.closed_form import state_at_loss
from numerics.dynamics import solve_reduced
from numerics.dynamics import Trajectory


def H_drift(res):
    """max |H(t) - H(0)| relative to the magnitude of H's terms along the
    trajectory (H itself can be a small difference of large terms)."""
    sys = res.system
    H = np.asarray(sys.first_integral(res.mu_OV, res.mu_QK), dtype=float)
    return float(np.max(np.abs(H - H[0])) / np.max(sys.first_integral_scale(res.mu_OV, res.mu_QK)))


@pytest.mark.parametrize("param", PARAMETERIZATIONS)
def test_first_integral_paper_setting(param):
    res = solve_reduced(param, eta_QK=2.0, eta_OV=0.5, target_loss=1e-3)
    assert isinstance(res, Trajectory) and res.success and res.status == 1
    assert res.system.balanced
    assert abs(res.loss[-1] - 1e-3) < 1e-9
    assert H_drift(res) < 1e-8


@settings(max_examples=6)
@given(param=st.sampled_from(PARAMETERIZATIONS),
       m=st.floats(0.5, 20), n=st.floats(5, 200), b=st.floats(2, 200),
       M=st.integers(2, 50), eta_QK=st.floats(0.05, 20), eta_OV=st.floats(0.05, 20),
       eps=st.floats(1e-3, 0.3), frac=st.floats(0.05, 0.8))
def test_first_integral_random_parameters(param, m, n, b, M, eta_QK, eta_OV, eps, frac):
    target = frac * math.log(M)
    res = solve_reduced(param, m=m, n=n, b=b, M=M, eta_QK=eta_QK, eta_OV=eta_OV, eps=eps,
                        target_loss=target)
    assert res.status == 1, res.message
    assert np.all(np.diff(res.loss) <= 1e-12)          # the loss decreases
    assert H_drift(res) < 1e-8


@pytest.mark.parametrize("r", [0.01, 1.0, 100.0])
def test_crossings_match_closed_form(r):
    thresholds = [1.0, 0.1, 1e-3, 1e-5]
    res = solve_reduced("CACO", eta_QK=r, eta_OV=1.0, loss_thresholds=thresholds, target_loss=1e-5)
    cf = state_at_loss(np.array(thresholds), r)
    assert res.thresholds == tuple(thresholds)
    for i, (L, c) in enumerate(zip(thresholds, res.crossings)):
        assert abs(c["loss"] - L) <= 1e-9 * L
        for k in ("mu_OV", "mu_QK", "alpha"):
            assert abs(c[k] - getattr(cf, k)[i]) <= 1e-9 * abs(getattr(cf, k)[i])


def test_crossings_with_t_eval_and_unreached_thresholds():
    res = solve_reduced("CACO", t_span=(0, 1e5), t_eval=np.linspace(0, 1e5, 11),
                        loss_thresholds=[2.9, 1e-3])
    assert res.status == 0 and res.t.shape == (11,)
    # the crossing located to rounding (its time by brentq at 4 eps), the share by its formula in doubles
    assert res.crossings[0]["loss"] == pytest.approx(2.9, rel=1e-12, abs=0) and res.crossings[1] is None
    np.testing.assert_allclose(res.alpha, 5 * np.exp(res.mu_QK) / (5 * np.exp(res.mu_QK) + 50), rtol=1e-15, atol=0)


def test_terminal_state_appended_with_t_eval():
    res = solve_reduced("CACO", t_eval=np.linspace(0, 1e9, 5), target_loss=0.5)
    assert res.status == 1 and res.t[-1] == res.target_state["t"]
    assert abs(res.loss[-1] - 0.5) < 1e-9


def test_tiny_loss_stable():
    res = solve_reduced("CACO", eta_QK=10.0, target_loss=1e-12, loss_thresholds=[1e-8])
    assert res.status == 1 and abs(res.loss[-1] / 1e-12 - 1) < 1e-8
    assert np.all(res.loss > 0)


def test_unbalanced_factorized_uses_conserved_quantities():
    res = solve_reduced("FAFO", eta_Q=2.0, eta_K=0.5, eta_O=1.0, eta_V=3.0, eps=0.1,
                        target_loss=0.1)
    assert not res.system.balanced and res.status == 1
    # eps^2 and the rates' arithmetic in doubles: an ulp or two
    assert res.system.C_QK == pytest.approx(0.01 * (1 / 2.0 - 1 / 0.5), rel=1e-15, abs=0)
    assert res.system.C_OV == pytest.approx(0.01 * (1 / 1.0 - 1 / 3.0), rel=1e-15, abs=0)
    assert res.mu_OV[0] == pytest.approx(0.01 / math.sqrt(50), rel=1e-15, abs=0)
    assert res.mu_QK[0] == pytest.approx(0.01 / 50, rel=1e-15, abs=0)


def test_jacobian_methods_agree():
    a = solve_reduced("FACO", target_loss=0.01, method="LSODA")
    c = solve_reduced("FACO", target_loss=0.01)
    assert abs(a.target_state["t"] / c.target_state["t"] - 1) < 1e-6


@pytest.mark.parametrize("kw,match", [
    (dict(parameterization="XX"), "parameterization"),
    (dict(eta_QK=-1.0), "eta_QK"), (dict(eta_V=0.0), "eta_V"), (dict(eps=np.inf), "eps"),
    (dict(parameterization="FAFO", eps=1e308, target_loss=0.5), r"^eps must be in \[1e-50, 100\] \(the initialization"),
    (dict(parameterization="FACO", eps=1e3, target_loss=0.5), r"^eps must be in \[1e-50, 100\]"),
    (dict(parameterization="CAFO", eps=1e-160, target_loss=0.5), r"^eps must be in \[1e-50, 100\]"),
    (dict(m=0.0), "m"), (dict(M=1), "M"),
    (dict(target_loss=math.log(20)), r"target_loss.*\(0, log M\)"),
    (dict(target_loss=-0.1), "target_loss"),
    (dict(loss_thresholds=[0.5, 4.0]), "loss_thresholds"),
    (dict(t_span=(0, -1), target_loss=0.1), "t_span"),
    (dict(), "t_span"),
    (dict(mu0=(0.0, np.nan), target_loss=0.1), "mu0"),
    # regressions: each of these used to hang or return silently wrong records
    (dict(t_span=(0, math.inf)), "t_span"),
    (dict(rtol=0.0, target_loss=0.1), "rtol"),
    (dict(rtol=math.nan, target_loss=0.1), "rtol"),
    (dict(atol=-1.0, target_loss=0.1), "atol"),
    (dict(t_span=(0, 10), t_eval=[1, math.nan]), "t_eval"),
    (dict(t_span=(0, 10), t_eval=[1, 20]), "t_eval"),
    (dict(target_loss=0.1, max_steps=0), "max_steps"),
    (dict(target_loss=0.1, method="Euler"), "method"),
])
def test_invalid_inputs(kw, match):
    kw = dict(kw)
    param = kw.pop("parameterization", "CACO")
    with pytest.raises(ValueError, match=match):
        solve_reduced(param, **kw)


def _reaches_the_target_from(P, eps_values):
    for eps in eps_values:
        res = solve_reduced(P, eps=eps, target_loss=0.5)
        assert res.status == 1 and (abs(res.loss[-1] - 0.5) < 1e-9 or res.loss[0] <= 0.5), (eps, res.message)


@pytest.mark.parametrize("P", ["CAFO", "FACO", "FAFO"])
def test_every_parameterization_reaches_its_target_at_the_ends_of_the_eps_range(P):
    """EPS_RANGE is honest at its ends and its middle: from each the flow reaches the target (or starts
    below it). Beyond it eps = 1e308 raised OverflowError, 1e-160 named atol, and FACO stalled at 1e3 and
    1e-100; every decade between is the slow test below."""
    from numerics.dynamics.reduced_system import EPS_RANGE
    _reaches_the_target_from(P, (EPS_RANGE[0], math.sqrt(EPS_RANGE[0] * EPS_RANGE[1]), EPS_RANGE[1]))


@pytest.mark.slow
@pytest.mark.parametrize("P", ["CAFO", "FACO", "FAFO"])
def test_every_parameterization_reaches_its_target_across_the_eps_range(P):
    """The check above from each of 27 points spread evenly in log over EPS_RANGE (about every other
    decade)."""
    from numerics.dynamics.reduced_system import EPS_RANGE
    _reaches_the_target_from(P, np.geomspace(*EPS_RANGE, 27))


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
@pytest.mark.parametrize("kw", [dict(m=1e308), dict(n=1e308), dict(b=1e308), dict(m=1e-308), dict(n=1e-308),
                                dict(b=1e-308), dict(m=1.1e100, n=1.1e101), dict(b=9e-101)])
def test_paper_parameters_outside_their_range_are_refused(P, kw):
    """m = 1e308 ran until the solver stopped ("step size less than spacing between numbers"), b = 1e308
    was an OverflowError, b = 1e-308 a non-finite start, m = 1e-308 a RuntimeWarning: each is a
    ValueError naming the parameter and MODEL_PARAMETER_RANGE, on the paper's and another task's path."""
    from numerics.dynamics.reduced_system import ReducedSystem
    name = next(iter(kw))
    with pytest.raises(ValueError, match=rf"^{name} must be in \[1e-100, 1e\+100\] \(the paper's parameters"):
        solve_reduced(P, target_loss=0.5, **kw)
    with pytest.raises(ValueError, match=rf"^{name} must be in \[1e-100, 1e\+100\]"):
        ReducedSystem(P, task="query-in-context", mu0=(0.0,) * 4 if P != "CACO" else None, **kw)


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
@pytest.mark.parametrize("scale", [1e-100, 1e100])
def test_the_range_of_the_paper_parameters_answers_at_its_ends(P, scale):
    """At the ends of MODEL_PARAMETER_RANGE (m and n scaled together; b at 1e100) the flow reaches the
    target (measured to 1e150 and 1e-150; 1e160 failed), on the same time as at the paper's setting."""
    at_setting = solve_reduced(P, target_loss=1.0)
    m = scale if scale < 1 else scale / 10          # n / m = 10, as in the paper's setting
    res = solve_reduced(P, m=m, n=10 * m, target_loss=1.0)
    assert res.status == 1 and abs(res.loss[-1] - 1.0) < 1e-9 and abs(res.t[-1] / at_setting.t[-1] - 1) < 1e-8
    res = solve_reduced(P, b=1e100, target_loss=1.0)
    assert res.status == 1 and abs(res.loss[-1] - 1.0) < 1e-9, res.message


def test_initial_loss_below_target_returns_at_once():
    """Regression: started below the target, the run used to integrate forever."""
    res = solve_reduced("CACO", mu0=(100.0, 5.0), target_loss=0.5)
    assert res.status == 1 and res.t.tolist() == [0.0] and res.nsteps == 0
    assert "already" in res.message and res.target_state["loss"] < 0.5


def test_unreachable_target_is_bounded():
    """Regression: FACO from mu0 = (0, -1) never reaches the target (mu_QK runs off to
    -inf and the loss returns to log M); the run used to go on forever. Now the step
    budget (or the finite horizon of t_span=(0, inf)) ends it with status -1."""
    res = solve_reduced("FACO", mu0=(0.0, -1.0), target_loss=0.5, max_steps=200)
    assert res.status == -1 and not res.success and res.nsteps == 200
    assert "max_steps" in res.message and res.target_state is None and res.reason == "steps"
    assert np.all(np.isfinite(res.loss))


def test_the_reason_a_flow_ended():
    """``reason`` says in one word why a flow ended: the target, the end of the span, the budget."""
    assert solve_reduced("CACO", target_loss=0.1).reason == "terminal"
    assert solve_reduced("CACO", t_span=(0.0, 10.0)).reason == "end"
    assert solve_reduced("CACO", target_loss=0.1, max_steps=3).reason == "steps"
    assert solve_reduced("CACO", mu0=(30.0, 30.0), target_loss=0.5).reason == "terminal"   # already below


def test_same_records_as_solve_ivp():
    """The bounded step loop reproduces scipy.integrate.solve_ivp step for step."""
    from scipy.integrate import solve_ivp
    res = solve_reduced("FAFO", eta_QK=3.0, t_span=(0, 1e5), t_eval=np.geomspace(1, 1e5, 7))
    sys = res.system
    ref = solve_ivp(lambda t, y: np.array(sys.rhs(*y), dtype=float), (0, 1e5), sys.mu0,
                    method="DOP853", t_eval=res.t, rtol=1e-10, atol=res.system.mu0[1] * 1e-12)
    np.testing.assert_array_equal(res.mu_OV, ref.y[0])
    np.testing.assert_array_equal(res.mu_QK, ref.y[1])


@pytest.mark.slow
@settings(max_examples=60)
@given(param=st.sampled_from(PARAMETERIZATIONS),
       m=st.floats(0.5, 20), n=st.floats(5, 200), b=st.floats(2, 200),
       M=st.integers(2, 50), eta_QK=st.floats(0.05, 20), eta_OV=st.floats(0.05, 20),
       eps=st.floats(1e-3, 0.3), frac=st.floats(0.01, 0.8))
def test_first_integral_random_parameters_exhaustive(param, m, n, b, M, eta_QK, eta_OV, eps, frac):
    test_first_integral_random_parameters.hypothesis.inner_test(
        param, m, n, b, M, eta_QK, eta_OV, eps, frac)


# --------------------------------------------------------------------------- #
# one ReducedSystem for every task
# --------------------------------------------------------------------------- #
def test_lambdified_backend_of_the_paper_task_matches_the_generated_code():
    """The engine's reduction of the paper task, lambdified at run time, against the
    generated code (a separate derivation: reduction.reduced_odes -> codegen)."""
    from numerics.dynamics.task_systems import reduced_flow
    from numerics.dynamics import ReducedSystem
    gen = ReducedSystem("CACO", eta_QK=3.0, eta_OV=0.5)
    flow = reduced_flow("paper", "CACO")
    values = dict(m=5, n=50, b=50, M=20, eta_QK=3.0, eta_OV=0.5)
    order = [flow.names.index(k) for k in ("mu_OV", "mu_QK")]
    for y in [(0.3, 0.7), (5.0, -1.0), (12.0, 2.5)]:
        yf = [y[order.index(i)] for i in range(2)]          # (mu_QK, mu_OV) order of the engine
        J = flow.jacobian_function()(*yf, *(values[k] for k in flow.param_names))[np.ix_(order, order)]
        np.testing.assert_allclose(J, gen.jacobian(*y), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(flow.rhs_at(yf, values)[order], gen.rhs(*y), rtol=1e-13)


@pytest.mark.parametrize("task, params", [("query-in-context", {}),
                                          ("shared-irrelevant", {"n_c": 3})])
def test_task_jacobian_matches_finite_differences(task, params):
    from numerics.dynamics import ReducedSystem
    sys_ = ReducedSystem("CACO", task=task, eta_QK=2.0, **params)
    y = np.linspace(0.2, 1.4, len(sys_.names))
    J = sys_.jacobian(*y)
    h = 1e-6
    for j in range(len(y)):
        e = np.zeros_like(y)
        e[j] = h
        col = (sys_.rhs(*(y + e)) - sys_.rhs(*(y - e))) / (2 * h)
        np.testing.assert_allclose(J[:, j], col, rtol=1e-6, atol=0)   # entries down to 2.5e-8


def test_task_integration_returns_a_trajectory_and_inherits_nothing_it_lacks():
    from numerics.dynamics import ReducedSystem
    sys_ = ReducedSystem("CACO", task="shared-irrelevant", eta_QK=2.0, n_c=3)
    res = sys_.integrate(target_loss=0.2, loss_thresholds=(1.0,), rtol=1e-12)
    assert isinstance(res, Trajectory) and res.status == 1 and res.task == "shared-irrelevant"
    assert res.coordinates == sys_.names and res.y.shape == (len(res.t), len(sys_.names))
    assert res.crossings[0]["loss"] == pytest.approx(1.0, rel=1e-12)
    # independent: the paper's closed form at the engine's mapped ratio 2 (n_c + 1)/n_c
    cf = state_at_loss(0.2, 2.0 * 4 / 3)
    assert res.target_state["alpha"] == pytest.approx(float(cf.alpha), rel=1e-9)
    assert res.mu_QK[-1] == pytest.approx(float(cf.mu_QK), rel=1e-9)
    implicit = sys_.integrate(target_loss=0.2, method="Radau", rtol=1e-10)
    assert implicit.njev > 0
    assert implicit.target_state["alpha"] == pytest.approx(float(cf.alpha), rel=1e-6)
    with pytest.raises(ValueError, match="closed form of the paper's task"):
        sys_.orbit(1.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(parameterization="FAFO", task="query-in-context"), "give mu0"),
    (dict(task="query-in-context", mu0=(0.0, 0.0)), "mu0 must be 4 finite numbers"),
    (dict(task="paper", n_c=2), "no parameter 'n_c'"),
    (dict(task="nope"), "unknown task"),
])
def test_task_system_bad_input(kwargs, match):
    from numerics.dynamics import ReducedSystem
    with pytest.raises(ValueError, match=match):
        ReducedSystem(**kwargs)


@pytest.mark.parametrize("P, kw, names", [("FACO", dict(eta_QK=1e-170), ("eta_Q", "eta_K")),
                                          ("CAFO", dict(eta_OV=1e-170), ("eta_O", "eta_V")),
                                          ("FAFO", dict(eta_O=1e-200, eta_V=1e-130), ("eta_O", "eta_V"))])
def test_factor_rates_whose_product_underflows_are_named(P, kw, names):
    """The conserved quantity eps^2 (eta_B - eta_A) / (eta_A eta_B) of a factorized circuit divides by the
    rates' product: below 5e-324 (rates near 1e-170) it was a bare ZeroDivisionError ("float division by
    zero"), also from state_at_loss(..., parameterization=P). Now a ValueError naming both rates."""
    from numerics.dynamics import state_at_loss
    from numerics.dynamics.reduced_system import ReducedSystem
    pattern = rf"^{names[0]} \* {names[1]} must be at least 5e-324 \(a double\); got "
    with pytest.raises(ValueError, match=pattern):
        ReducedSystem(P, **kw)
    if "eta_QK" in kw:
        with pytest.raises(ValueError, match=pattern):
            state_at_loss(0.5, kw["eta_QK"], parameterization=P)
    assert ReducedSystem(P, **{k: v * 1e10 for k, v in kw.items()}).mu0      # rates near 1e-160: answered
