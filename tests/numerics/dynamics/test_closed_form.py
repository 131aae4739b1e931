"""Closed-form state at a fixed loss vs 50-digit mpmath, and vs the ODE."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from numerics.dynamics import StateAtLoss
from numerics.dynamics.closed_form import state_at_loss, state_at_loss_mpmath, time_to_loss
from numerics.dynamics import solve_reduced

LOG20 = math.log(20)
KEYS = ("mu_OV", "mu_QK", "alpha")


def assert_matches_reference(L, r, rtol=1e-12, **kw):
    st = state_at_loss(L, r, **kw)
    ref = state_at_loss_mpmath(L, r, dps=50, **kw)
    for k in KEYS:
        v, ref_k = float(getattr(st, k)), ref[k]
        err = abs(mpmath.mpf(v) - ref_k) / abs(ref_k)
        assert err < rtol, (L, r, k, v, ref_k, err)


EXTREME_LOSSES = [1e-300, 1e-200, 1e-50, 1e-10, 1e-4, 0.3, 1.0, 2.5,
                  LOG20 * (1 - 1e-6), LOG20 * (1 - 1e-12), np.nextafter(LOG20, 0)]


@pytest.mark.parametrize("L", EXTREME_LOSSES)
@pytest.mark.parametrize("r", [1e-8, 1e-2, 1.0, 1e2, 1e8])
def test_accuracy_extremes(L, r):
    assert_matches_reference(L, r)


def test_accuracy_other_model_parameters():
    for kw in (dict(m=1, n=1000, b=3, M=2), dict(m=30, n=2, b=500, M=1000)):
        logM = math.log(kw["M"])
        for L in (1e-250, 1e-3, 0.5 * logM, np.nextafter(logM, 0)):
            for r in (1e-8, 1.0, 1e8):
                assert_matches_reference(L, r, **kw)


def test_accuracy_vectorized_grid_matches_scalar_reference():
    L = np.logspace(-300, math.log10(2.99), 13)
    r = np.logspace(-8, 8, 7)
    st = state_at_loss(L[:, None], r[None, :])
    for i in range(0, 13, 3):
        for j in range(7):
            ref = state_at_loss_mpmath(L[i], r[j])
            for k in KEYS:
                assert abs(getattr(st, k)[i, j] - float(ref[k])) <= 1e-12 * abs(float(ref[k]))


def test_broadcasting_shapes():
    st = state_at_loss(np.full((3, 1), 0.1), np.array([0.1, 1, 10, 100]))
    assert isinstance(st, StateAtLoss) and st.method == "closed form"
    for v in st[:7]:        # the array fields mu_OV .. s; then method, time, coordinates, ...
        assert v.shape == (3, 4)
    assert st.coordinates["mu_QK"] is st.mu_QK
    s0 = state_at_loss(0.1, 1.0)
    assert s0.alpha.shape == () and s0.mu_OV.shape == ()
    assert state_at_loss([0.1, 0.2], 1.0).alpha.shape == (2,)
    assert state_at_loss(np.empty((0, 2)), 1.0).alpha.shape == (0, 2)
    # the same entry gives the same answer in any batch
    assert state_at_loss(0.1, 1.0).mu_QK == st.mu_QK[0, 1]


def test_state_consistency():
    """The returned state has the requested loss and satisfies alpha = p/(1+p), s = alpha mu_OV and
    s = log((M-1)/(e^L - 1)) (in mpmath: it cancels near log M), the last two losses from mpmath."""
    from numerics.functions import loss_fn
    L = np.array([1e-8, 1e-3, 0.5, 2.0, LOG20 - 1e-3, LOG20 - 1e-9])
    st = state_at_loss(L, 3.0)
    np.testing.assert_allclose(loss_fn().func(st.mu_OV, st.mu_QK, 5, 50, 20), L, rtol=1e-12)
    np.testing.assert_allclose(st.alpha, st.p / (1 + st.p), rtol=1e-15)
    np.testing.assert_allclose(st.s, st.alpha * st.mu_OV, rtol=1e-14)
    with mpmath.workdps(40):
        s = [float(mpmath.log(19 / mpmath.expm1(mpmath.mpf(x)))) for x in L]
    np.testing.assert_allclose(st.s, s, rtol=1e-14)


def test_accuracy_where_the_margin_starts_to_cancel():
    """Loss 3e-4 to 0.06 below log M, where the margin in doubles loses digits and the switch to
    mpmath is decided (MARGIN_RTOL): the state to the documented 1e-13 of the 30-digit reference."""
    L = LOG20 - np.logspace(-3.5, -1.2, 20)
    st = state_at_loss(L, 1.0)
    for i, x in enumerate(L):
        ref = state_at_loss_mpmath(x, 1.0, dps=30)
        for k in ("mu_OV", "mu_QK", "alpha", "p", "s"):
            assert abs(getattr(st, k)[i] - float(ref[k])) <= 1e-13 * abs(float(ref[k])), (x, k)


@pytest.mark.parametrize("m, n, b", [(5, 50, 50), (1e-3, 1e3, 1)])
def test_time_at_a_large_ratio_resolves_the_peak_at_the_start(m, n, b):
    """At ratio 1e12 the integrand b (e^(alpha mu_OV) + M - 1) / alpha falls from its start, 1/alpha_0, within
    mu_OV ~ 1e-5 (the orbit's r mu_OV^2 term): the quadrature's nodes on the first panel, [0, mu_OV*], missed
    the peak and the time was 2785.836 for the paper's setting (the reduced flow's 2785.943: 3.8e-5 off) and
    55.7 for m = 1e-3, n = 1e3 (81.4: 32 % off), with no warning. The reduced ODE integrated by DOP853 at
    rtol 1e-12 is the independent reference; they agree to 1e-9."""
    from numerics.dynamics import solve_reduced
    for ratio in (1e12, 1e6):
        run = solve_reduced("CACO", eta_QK=ratio, target_loss=1.0, rtol=1e-12, m=m, n=n, b=b, M=20)
        t = float(time_to_loss(1.0, ratio, m=m, n=n, b=b, M=20))
        assert t == pytest.approx(run.target_state["t"], rel=1e-9, abs=0), ratio


def test_time_to_a_tiny_loss_warns_of_no_panel_it_answers_again():
    """At M = 2, loss 1e-300, m = 1e-8, n = 1e8, b = 1e-8 a panel's quadrature in doubles fails and is answered
    again in mpmath, yet scipy's IntegrationWarning ("The integral is probably divergent") reached the caller.
    The time is the late-time law L t -> (M - 1) b / eta_OV = 1e-8 (t = 1e292), and no warning is left."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = float(time_to_loss(1e-300, 1.0, m=1e-8, n=1e8, b=1e-8, M=2))
    assert t * 1e-300 == pytest.approx(1e-8, rel=1e-6)


@pytest.mark.parametrize("M", [10**15 + 37, 2**53, 20])
def test_the_margin_near_its_switch_to_mpmath_holds_its_tolerance_at_large_M(M):
    """log(M - 1) - log(expm1(L)) rounds each logarithm to half an ulp of about log M: near log M that
    is the margin's error, which the switch to mpmath (estimated 8 eps (1 + s) / s) left out. At
    M = 1e15 + 37 the doubles answered s = 0.018 with a relative error of 1.5e-13, above MARGIN_RTOL
    (1e-13); the state's mu_OV, s (1 + p) / p, carried it. Now every margin answered is within 1e-13 of
    the 40-digit margin, on a grid of margins from 0.017 to 0.12."""
    from numerics.dynamics.closed_form import margin
    target = np.linspace(0.017, 0.12, 400)
    L = np.log1p((M - 1) * np.exp(-target))
    L = L[(L > 0) & (L < math.log(M))]
    got = margin(L, float(M))
    with mpmath.workdps(40):
        want = np.array([float(mpmath.log(M - 1) - mpmath.log(mpmath.expm1(mpmath.mpf(x)))) for x in L])
    assert np.max(np.abs(got - want) / want) <= 1e-13
    st = state_at_loss(L[::40], 1.0, M=M)
    assert np.max(np.abs(st.s - want[::40]) / want[::40]) <= 1e-13


@settings(max_examples=40)
@given(L=st.floats(1e-250, 2.99), r1=st.floats(1e-8, 1e8), r2=st.floats(1e-8, 1e8))
def test_alpha_increases_with_ratio(L, r1, r2):
    lo, hi = sorted((r1, r2))
    st = state_at_loss(L, np.array([lo, hi]))
    assert st.alpha[0] <= st.alpha[1]
    assert st.mu_OV[0] >= st.mu_OV[1]


@settings(max_examples=30)
@given(L1=st.floats(1e-250, 2.99), L2=st.floats(1e-250, 2.99), r=st.floats(1e-8, 1e8))
def test_state_grows_as_loss_falls(L1, L2, r):
    lo, hi = sorted((L1, L2))
    st = state_at_loss(np.array([lo, hi]), r)
    assert st.mu_OV[0] >= st.mu_OV[1] and st.mu_QK[0] >= st.mu_QK[1]


@pytest.mark.parametrize("r", [0.01, 1.0, 100.0])
def test_time_to_loss_matches_ode(r):
    thresholds = [1.0, 1e-2, 1e-4]
    res = solve_reduced("CACO", eta_QK=r, eta_OV=1.0, loss_thresholds=thresholds, target_loss=1e-4, rtol=1e-12,
                        atol=1e-14)
    t = time_to_loss(np.array(thresholds), r)
    for i, L in enumerate(thresholds):
        assert abs(res.crossings[i]["t"] - t[i]) <= 1e-8 * t[i]
    assert t.shape == (3,) and np.all(np.diff(t) > 0)


def test_time_to_loss_broadcast_and_tiny_loss():
    t = time_to_loss(np.array([[0.5], [1e-300]]), np.array([0.1, 10.0]))
    assert t.shape == (2, 2) and np.all(np.isfinite(t)) and np.all(t[1] > t[0])


@pytest.mark.parametrize("r", [0.5, 20.0])
def test_a_panel_whose_quadrature_error_is_too_large_is_integrated_in_mpmath(r, monkeypatch):
    """Every panel's double quadrature reported with a finite but wrong value and an error estimate far
    above the tolerance (as near the end of a tiny loss, where the integrand overflows): each panel is
    integrated again in mpmath (tanh-sinh), and the times are the DOP853 flow's crossing times
    (an independent integration of the reduced ODE) to 1e-8, as test_time_to_loss_matches_ode asks of
    the double quadrature."""
    import scipy.integrate
    real_quad, sent = scipy.integrate.quad, []

    def unreliable(f, a, b, **kw):
        val, _ = real_quad(f, a, b, **kw)
        sent.append((a, b))
        return 1.5 * val, abs(val)
    thresholds = [1.0, 0.1]
    double = time_to_loss(np.array(thresholds), r)
    monkeypatch.setattr(scipy.integrate, "quad", unreliable)
    t = time_to_loss(np.array(thresholds), r)
    np.testing.assert_allclose(t, double, rtol=1e-10)      # the double quadrature, rtol 1e-11
    assert len(sent) >= 2
    res = solve_reduced("CACO", eta_QK=r, eta_OV=1.0, loss_thresholds=thresholds, target_loss=0.1, rtol=1e-12,
                        atol=1e-14)
    for i in range(2):
        assert abs(res.crossings[i]["t"] - t[i]) <= 1e-8 * t[i]


@pytest.mark.parametrize("bad", [0.0, -1.0, LOG20, 5.0, np.nan, np.inf, -np.inf])
def test_invalid_loss(bad):
    with pytest.raises(ValueError, match=r"loss.*\(0, log M\)"):
        state_at_loss(bad, 1.0)
    with pytest.raises(ValueError, match="loss"):
        state_at_loss([0.5, bad], 1.0)
    with pytest.raises(ValueError, match="loss"):
        time_to_loss(bad, 1.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf])
def test_invalid_ratio(bad):
    with pytest.raises(ValueError, match="ratio"):
        state_at_loss(0.5, bad)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, 1e-15, 1.0, "1e-8", None, True, [], [1e-10], [1e-10, 1e-9]])
def test_invalid_time_to_loss_rtol(bad):
    """Never SciPy's quadrature message (nor a silent run): rtol and its range are named."""
    with pytest.raises(ValueError, match=r"^rtol must be in \[1e-13, 1\)"):
        time_to_loss(0.5, 1.0, rtol=bad)


@pytest.mark.parametrize("bad", [0, -5, 10**9, 2.5, "50", None, True])
def test_invalid_mpmath_digits(bad):
    """Never a silent low-precision answer (dps <= 0) nor a run without end (dps huge)."""
    with pytest.raises(ValueError, match=r"^dps must be an integer in \[1, 10000\]"):
        state_at_loss_mpmath(0.5, 1.0, dps=bad)


@pytest.mark.parametrize("kw,name", [(dict(m=0), "m"), (dict(n=-1), "n"), (dict(b=np.inf), "b"),
                                     (dict(M=1.5), "M"), (dict(M=np.nan), "M")])
def test_invalid_model_parameters(kw, name):
    with pytest.raises(ValueError, match=name):
        state_at_loss(0.5, 1.0, **kw)


@pytest.mark.slow
def test_accuracy_dense_grid():
    L = np.concatenate([np.logspace(-300, 0, 40), LOG20 - np.logspace(-15, -1, 10)])
    r = np.logspace(-8, 8, 9)
    st = state_at_loss(L[:, None], r[None, :])
    for i in range(L.size):
        for j in range(r.size):
            ref = state_at_loss_mpmath(L[i], r[j])
            for k in KEYS:
                assert abs(getattr(st, k)[i, j] - float(ref[k])) <= 1e-12 * abs(float(ref[k]))


# ------------------------------------------------------- faults of issue 8

@pytest.mark.parametrize("kw,needle", [
    (dict(ratio=1e23), r"ratio must be in \[1e-12, 1e\+12\] for the closed-form state"),
    (dict(ratio=1e300), r"ratio must be in \[1e-12, 1e\+12\] for the closed-form state"),
    (dict(m=1e153), r"m must be in \[1e-08, 1e\+08\]"),
    (dict(b=1e308), r"b must be in \[1e-08, 1e\+08\]"),
    (dict(M=10**400), r"M must be an integer in \[2, 9007199254740992\]"),
    (dict(M=1e23), r"M must be an integer in \[2, 9007199254740992\]")])
def test_outside_supported_range_is_a_value_error(kw, needle):
    ratio = kw.pop("ratio", 1.0)
    for solver in (state_at_loss, state_at_loss_mpmath):
        with pytest.raises(ValueError, match=needle):
            solver(0.5, ratio, **kw)


CORNERS = [dict(m=m, n=n, b=b, ratio=r) for m in (1e-8, 1e8) for n in (1e-8, 1e8)
           for b in (1e-8, 1e8) for r in (1e-12, 1e12)]


@pytest.mark.parametrize("M", [2, 2**53])
@pytest.mark.parametrize("corner", CORNERS[::3])
def test_corners_of_the_supported_range(corner, M):
    """At the corners of SUPPORTED_RANGE the state is finite, lies on the loss
    level (loss_fn, independent of the state equation) and agrees with the
    high-precision solver."""
    from numerics.functions import loss_fn
    kw = dict(corner)
    r = kw.pop("ratio")
    Ls = np.array([1e-300, 0.5, math.log(M) * (1 - 1e-15)])
    st = state_at_loss(Ls, r, M=M, **kw)
    loss = loss_fn()(st.mu_OV, st.mu_QK, kw["m"], kw["n"], M)
    np.testing.assert_allclose(loss, Ls, rtol=1e-9)
    for i, L in enumerate(Ls):
        ref = state_at_loss_mpmath(L, r, M=M, dps=30, **kw)
        for k in KEYS:
            assert abs(getattr(st, k)[i] - float(ref[k])) <= 1e-12 * abs(float(ref[k])), (k, L)


def test_near_log_M_tiny_ratio_matches_high_precision():
    """The CLI's old bisection gave a negative mu_QK here and was 13 % off next to it."""
    for L, r in ((2.99573227355398, 1e-8), (2.99573227355399, 1.0)):
        st = state_at_loss(L, r)
        ref = state_at_loss_mpmath(L, r, dps=40)
        assert st.mu_QK > 0
        for k in KEYS:
            assert abs(getattr(st, k) - float(ref[k])) <= 1e-12 * abs(float(ref[k]))


def test_time_to_loss_at_the_edge_of_double_range():
    """t(L) ~ (M-1) b / L at small loss (derivations.tasks.paper.asymptotics.late_time):
    9.5e307 fits in a double (computed in mpmath where the integrand overflows);
    one hundredth of that loss does not and is a ValueError."""
    t = time_to_loss(1e-305, 1.0)
    assert math.isfinite(t[()]) and abs(t[()] / (19 * 50 / 1e-305) - 1) < 1e-5
    # another ratio through the mpmath panels (a wrong ratio passed to them is invisible
    # at ratio 1); the next order is larger at a small ratio (5.4e-5 here)
    t = time_to_loss(1e-305, 0.1)
    assert math.isfinite(t[()]) and abs(t[()] / (19 * 50 / 1e-305) - 1) < 1e-4
    with pytest.raises(ValueError, match="exceeds the double-precision range"):
        time_to_loss(1e-307, 1.0)


def test_time_to_loss_beyond_double_range_names_the_loss_and_its_bound():
    """The refusal names ``loss`` and its bound (M - 1) b / DBL_MAX = 19 x 50 / 1.798e308 = 5.28e-306 (the
    late-time t ~ (M - 1) b / L); it said only "use a larger loss". Just above the bound (5.4e-306): a finite
    time, 1.76e308; just below (5.2e-306): refused."""
    assert math.isfinite(time_to_loss(5.4e-306, 1.0)[()])
    with pytest.raises(ValueError, match=r"^loss must be above about \(M - 1\) b / 1\.798e\+308 = 5\.28e-306 "
                                         r"\(.*\); got 5\.2e-306$"):
        time_to_loss(5.2e-306, 1.0)


@pytest.mark.parametrize("L,r", [(1.0, 1.0), (1e-3, 100.0), (2.9, 1e-6), (1e-30, 1e4)])
def test_mpmath_state_holds_the_digits_asked_for(L, r):
    """``dps`` digits come back whatever the caller's mpmath precision (15 digits here), each within
    two units in the last place of the root found by hand: mpmath.findroot at 80 digits on the module
    docstring's F(p) = p + log(np/m) - m/n - r (M-1) s^2 (1 + 1/p)^2 / (2 M b), s = log((M-1)/(e^L - 1))."""
    m, n, b, M, dps = 5, 50, 50, 20, 50
    got = state_at_loss_mpmath(L, r, dps=dps)
    with mpmath.workdps(80):
        Lm, rm = mpmath.mpf(L), mpmath.mpf(r)
        s = mpmath.log((M - 1) / mpmath.expm1(Lm))
        def F(p):
            return p + mpmath.log(n * p / m) - mpmath.mpf(m) / n - rm * (M - 1) * s**2 * (1 + 1 / p)**2 / (2 * M * b)
        p = mpmath.findroot(F, mpmath.mpf(float(state_at_loss(L, r).p)))
        ref = {"p": p, "s": s, "alpha": p / (1 + p), "mu_QK": mpmath.log(n * p / m), "mu_OV": s * (1 + p) / p}
        ulp = mpmath.mpf(2) ** -mpmath.libmp.dps_to_prec(dps)
        for k, v in ref.items():
            assert abs(got[k] - v) <= 2 * ulp * abs(v), (k, got[k], v)


def test_mpmath_answers_only_where_the_margin_cancels(monkeypatch):
    """Doubles (bracket and Newton) answer every entry whose margin does not cancel (s above 0.02: loss
    from 1e-300 to 0.05 below log M) at every supported ratio, for the paper's m, n, b, M and two
    others; mpmath (slow) is left the entries nearer log M and a few at the corners of the range."""
    import numerics.dynamics.closed_form as cf
    calls = []
    monkeypatch.setattr(cf, "state_at_loss_mpmath", lambda L, r, **kw: calls.append((L, r)) or {})
    for kw in (dict(), dict(m=30, n=2, b=500, M=1000), dict(m=1e-3, n=1e3, b=1e3, M=10**6)):
        logM = math.log(kw.get("M", 20))
        L = np.concatenate([np.logspace(-300, -1, 12), logM * np.array([0.3, 0.9]), [logM - 0.05]])
        cf.state_at_loss(L[:, None], np.logspace(-12, 12, 9)[None, :], **kw)
    assert calls == []


def test_time_to_loss_keeps_no_panel_whose_error_estimate_exceeds_rtol(monkeypatch):
    """A panel whose quad error estimate lies between rtol and 1000 rtol was kept as it was (an accuracy up to
    1000 x the rtol asked for). With quad made to answer every panel 100 rtol off, with an estimate saying so,
    each panel is integrated again in mpmath: the time is the true one within rtol (1e-9 here)."""
    import scipy.integrate
    want = float(time_to_loss(0.5, 3.0, rtol=1e-9))
    true_quad = scipy.integrate.quad

    def off(f, a, c, **kw):
        val, _ = true_quad(f, a, c, **kw)
        return val * (1 + 100 * kw["epsrel"]), 100 * kw["epsrel"] * abs(val)
    monkeypatch.setattr(scipy.integrate, "quad", off)
    assert float(time_to_loss(0.5, 3.0, rtol=1e-9)) == pytest.approx(want, rel=1e-9, abs=0)


def test_margin_cancels_bounds_the_doubles_error_of_the_derived_margin():
    """margin_cancels estimates the absolute error of the margin in doubles (the generated
    ``sharpness.margin``) as eps (8 (1 + |s|) + log(M - 1)) and sends to mpmath every margin whose
    estimate exceeds MARGIN_RTOL relative. Against the derivation's own margin
    (:func:`derivations.tasks.paper.sharpness.margin_at_loss`, lambdified by SymPy to mpmath and evaluated
    at 50 digits), on 1500 losses per M with margins from 1e-3 to 3: the estimate is a bound (the
    largest error / estimate at most 1; it is 0.06 to 0.46 here), not loose by more than 30 (at least 1/30
    at every M), and every margin it leaves to doubles is within MARGIN_RTOL."""
    import sympy as sp
    from derivations.symbolic.symbols import L as L_sym, M as M_sym
    from derivations.tasks.paper.sharpness import margin_at_loss
    from numerics.dynamics.closed_form import MARGIN_RTOL, margin_cancels
    from numerics.functions.lambdified import margin_at_loss_fn
    derived = sp.lambdify((L_sym, M_sym), margin_at_loss(), "mpmath")
    eps = np.finfo(float).eps
    for M in (2, 20, 10**6, 10**15 + 37, 2**53):
        L = np.log1p((M - 1) * np.exp(-np.geomspace(1e-3, 3.0, 1500)))
        L = L[(L > 0) & (L < math.log(M))]
        s = margin_at_loss_fn().func(L, float(M))
        with mpmath.workdps(50):
            true = np.array([float(derived(mpmath.mpf(x), mpmath.mpf(M))) for x in L])
        estimate = eps * (8 * (1 + np.abs(s)) + math.log(M - 1))        # as documented; probed through the flags
        ratio = np.abs(s - true) / estimate
        assert 1 / 30 <= ratio.max() <= 1, M
        flagged = margin_cancels(s, float(M))
        np.testing.assert_array_equal(flagged, ~(estimate / np.abs(s) < MARGIN_RTOL))
        assert flagged.any() and not flagged.all()
        assert np.max(np.abs(s - true)[~flagged] / true[~flagged]) <= MARGIN_RTOL, M
