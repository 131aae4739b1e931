"""The vectorized bracketed root of the paper's closed forms: per-element status, never a silent NaN."""
from functools import lru_cache

import numpy as np
import pytest
from scipy.optimize import brentq

from numerics.dynamics.paper_closed_forms import PaperClosedForms
from numerics.dynamics.reduced_system import ReducedSystem

root = PaperClosedForms._increasing_root


def test_roots_agree_with_brentq_point_by_point():
    """Each element's root is brentq's (an independent solver) to the bracket tolerance; elements already
    at or past the root stay at ``lo``."""
    c = np.array([0.5, 3.0, 40.0, -1.0, 1e3])
    got = root(lambda x, ci: x ** 3 - ci, np.zeros(5), c)
    for ci, x in zip(c, got):
        want = 0.0 if ci <= 0 else brentq(lambda t: t ** 3 - ci, 0.0, 20.0, xtol=1e-15, rtol=1e-15)
        assert x == pytest.approx(want, rel=1e-14, abs=1e-15)


def test_undefined_or_unbracketed_is_an_error_not_nan():
    with pytest.raises(ArithmeticError, match="undefined"):
        root(lambda x, c: np.where(c > 0, np.nan, x - c), np.zeros(2), np.array([1.0, -1.0]))
    with pytest.raises(ArithmeticError, match="no bracket .* 1 of 2 points"):
        root(lambda x, c: np.tanh(x) - c, np.zeros(2), np.array([0.5, 2.0]))     # tanh never reaches 2


def test_orbit_and_state_at_loss_are_vectorized_and_keep_the_first_integral():
    system = ReducedSystem("FAFO", eta_QK=3.0, mu0=(0.3, 0.2))
    x = np.array([[0.3, 1.0], [5.0, 20.0]])
    u = system.orbit(x)
    assert u.shape == (2, 2) and np.all(np.isfinite(u))
    drift = system.first_integral(x, u) - system.first_integral(*system.mu0)
    assert np.all(np.abs(drift) <= 1e-9 * system.first_integral_scale(x, u))
    L0 = float(system.loss(*system.mu0))
    st = system.state_at_loss(np.array([0.9, 0.5, 0.1]) * L0)
    assert np.allclose(system.loss(st.mu_OV, st.mu_QK), np.array([0.9, 0.5, 0.1]) * L0, rtol=1e-10, atol=0)
    with pytest.raises(ValueError, match="mu_QK\\(0\\) > 0"):
        ReducedSystem("FACO", eta_QK=1.0, mu0=(0.0, 0.0)).state_at_loss(0.5)


def _explicit_orbit_state_mpmath(L, ratio, mu0, power, m=5.0, n=50.0, b=50.0, M=20):
    """mu_QK at loss ``L`` on the explicit orbit, written here from the documented reduced ODE (unit OV
    rates): d mu_QK / d mu_OV = ratio (M - 1) (1 - alpha) mu_OV^(power - 1) / (M b^(power / 2 + 1/2)) * c,
    with c = 1 (CACO, power 2) or 1/2 (CAFO, power 1, balanced factors), i.e.
    (m/n) expm1(u - u0) e^u0 + (u - u0) = k (mu_OV^power - mu_OV_0^power), solved with mu_OV = s(L)/alpha(u)
    by bisection at 60 digits."""
    import mpmath
    with mpmath.workdps(60):
        x0, u0 = (mpmath.mpf(v) for v in mu0)
        m, n, b, M, r = (mpmath.mpf(v) for v in (m, n, b, M, ratio))
        k = r * (M - 1) / (2 * M * b) if power == 2 else r * (M - 1) / (2 * M * b ** mpmath.mpf(1.5))
        s = mpmath.log(M - 1) - mpmath.log(mpmath.expm1(mpmath.mpf(L)))

        def h(u):          # increasing in u; zero at the state
            x = s * (1 + n * mpmath.exp(-u) / m)
            return m / n * mpmath.exp(u0) * mpmath.expm1(u - u0) + (u - u0) - k * (x ** power - x0 ** power)
        lo, hi = u0, u0 + 1
        while h(hi) < 0:
            hi = u0 + 2 * (hi - u0)
        for _ in range(160):          # 2**-160: mu_QK as small as 1e-30 to 1e-18 relative
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if h(mid) < 0 else (lo, mid)
        return float((lo + hi) / 2)


@pytest.mark.parametrize("P, ratio, loss, mu0", [
    ("CAFO", 1e-12, 2.99, None),      # the doubles gave mu_QK = 0.0 (true 8.1e-17)
    ("CAFO", 1e-10, 2.99, None),      # 1.4 % off
    ("CAFO", 1e-2, 2.99, None),       # 4e-11 off
    ("CAFO", 3.0, 0.5, None),         # no cancellation: the doubles answer
    ("CACO", 1e-9, 2.9, (0.5, 0.0)),  # CACO from a point other than zero: the same explicit orbit
])
def test_explicit_orbit_state_keeps_mu_QK_to_relative_accuracy(P, ratio, loss, mu0):
    """The explicit orbit mu_QK = log omega(z) - log(m/n) cancels while mu_QK is tiny (small ratio, loss near
    log M): the state at a loss gave mu_QK with an error up to 100 %. Those entries are solved in mpmath."""
    from numerics.dynamics import state_at_loss
    kw = {} if mu0 is None else {"mu0": mu0}
    system = ReducedSystem(P, eta_QK=ratio, **kw)
    want = _explicit_orbit_state_mpmath(loss, ratio, system.mu0, 2 if P == "CACO" else 1)
    st = system.state_at_loss(np.array([loss, loss]))
    assert st.mu_QK == pytest.approx([want, want], rel=1e-12, abs=0)
    assert float(st.alpha[0]) == pytest.approx(float(system.alpha(want)), rel=1e-14, abs=0)
    if mu0 is None:
        assert float(state_at_loss(loss, ratio, parameterization=P).mu_QK) == pytest.approx(want, rel=1e-12, abs=0)


def test_explicit_orbit_state_at_a_vanishing_ratio_is_linear_in_it():
    """At ratio 1e-300 mu_QK is about 1e-302: (m/n) expm1(u) + u = k mu_OV with k proportional to the ratio, so
    mu_QK / ratio is the same at 1e-30 and 1e-300 to rounding (the mpmath retry doubles its digits until the
    root stands out of the noise; it raised ArithmeticError at 152 digits)."""
    from numerics.dynamics import state_at_loss
    u = [float(state_at_loss(2.5, r, parameterization="CAFO").mu_QK) / r for r in (1e-30, 1e-300)]
    assert u[1] == pytest.approx(u[0], rel=1e-14, abs=0)


@pytest.mark.parametrize("P", ["CAFO", "FACO", "FAFO"])
def test_state_just_below_the_initial_loss_has_that_loss(P):
    """From the paper's initialization the margin starts at about 1e-6, and s = log(M-1) - log(expm1(L)) in
    doubles is off by about 1e-15 / s: the state's margin alpha mu_OV was 2.5e-10 off the loss asked for, and
    on the explicit orbit (CAFO) mu_QK, which grows with s - s(0), 3e-4 off. The margin is evaluated in
    mpmath where the doubles cancel (as for CACO from zero); checked here against the loss in mpmath."""
    import mpmath
    system = ReducedSystem(P, eta_QK=2.0)
    L0 = float(system.loss(*system.mu0))
    losses = L0 - np.array([1e-12, 1e-8, 1e-6])
    st = system.state_at_loss(losses)
    with mpmath.workdps(40):
        for L, x, u in zip(losses, st.mu_OV, st.mu_QK):
            s = mpmath.log(19) - mpmath.log(mpmath.expm1(mpmath.mpf(L)))
            margin = mpmath.mpf(x) / (1 + 10 * mpmath.exp(-mpmath.mpf(u)))     # alpha mu_OV, m/n = 1/10
            assert float(abs(margin / s - 1)) < 1e-13
            if P == "CAFO":
                assert u == pytest.approx(_explicit_orbit_state_mpmath(L, 2.0, system.mu0, 1), rel=1e-12, abs=0)


@lru_cache(maxsize=None)
def _derived_orbit_equation(P):
    """``(g, names)``: H(s(L) / alpha(u), u) - H(x0, u0) of :func:`_derived_orbit_root` as an mpmath function
    of ``(u, L, x0, u0, *names)``."""
    import sympy as sp
    from derivations.catalog import results
    from derivations.symbolic.symbols import L as L_sym, mu_OV, mu_QK
    x0, u0 = sp.Symbol("x0"), sp.Symbol("u0")
    derived = results()
    H = derived[f"{P}.first_integral"]
    G = H.subs(mu_OV, derived["sharpness.margin"] / derived["model.alpha"]) - H.subs({mu_OV: x0, mu_QK: u0})
    free = sorted(G.free_symbols - {mu_QK, L_sym, x0, u0}, key=str)
    return sp.lambdify((mu_QK, L_sym, x0, u0, *free), G, "mpmath"), tuple(map(str, free))


def _derived_orbit_root(P, values, mu0, losses, dps=50):
    """mu_QK where the balanced orbit through ``mu0`` meets the margin s(L) at each loss, from the
    derivation alone: the root in u of H(s / alpha(u), u) - H(mu0), with H, alpha and s the derived
    ``<P>.first_integral``, ``model.alpha`` and ``sharpness.margin`` (:func:`derivations.catalog.results`)
    lambdified by SymPy to mpmath, by bisection at ``dps`` digits (H(s / alpha(u), u) increases in u, from
    mu_QK(0) up)."""
    import mpmath
    g, free = _derived_orbit_equation(P)
    out = []
    with mpmath.workdps(dps):
        args = [mpmath.mpf(v) for v in mu0] + [mpmath.mpf(values[p]) for p in free]
        for L in losses:
            Lm = mpmath.mpf(float(L))
            lo, hi = args[1], args[1] + 1
            while g(hi, Lm, *args) < 0:
                hi = lo + 2 * (hi - lo)
            for _ in range(int(3.4 * dps)):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if g(mid, Lm, *args) < 0 else (lo, mid)
            out.append((lo + hi) / 2)
    return out


@pytest.mark.parametrize("P, kwargs", [("CAFO", {}), ("CACO", {"mu0": (0.5, 0.0)}),
                                       ("CACO", {"mu0": (2.0, 1.5)}),
                                       ("CAFO", {"mu0": (1.0, -2.0), "m": 0.01, "n": 300.0, "M": 7})])
def test_explicit_root_terms_bound_the_doubles_root_of_the_derived_orbit(P, kwargs, monkeypatch):
    """The explicit orbit's root in doubles is off by at most a few ulp of ``_explicit_root_terms`` (the
    rule that sends a root to mpmath takes 8 ulp). With the mpmath retry switched off, each root at 3 ratios
    (1e-10, 1e-3, 3) x 6 losses (1e-9 to 0.9 L0 below the initial loss L0) against the derivation's root
    (:func:`_derived_orbit_root`): |error| <= eps x terms at every point (it is at most 0.5 here), and at
    least 1/20 of it at some point (the terms are not loose)."""
    import mpmath
    from numerics.dynamics.closed_form import margin
    monkeypatch.setattr(PaperClosedForms, "_explicit_root_mpmath", lambda self, loss, u, terms: u)
    eps = np.finfo(float).eps
    worst = 0.0
    for ratio in (1e-10, 1e-3, 3.0):
        system = ReducedSystem(P, eta_QK=ratio, **kwargs)
        L0 = float(system.loss(*system.mu0))
        losses = L0 - np.geomspace(1e-9, 0.9 * L0, 6)
        u = system.state_at_loss(losses).mu_QK
        terms = system._explicit_root_terms(u, np.asarray(margin(losses, system.M), dtype=float))
        want = _derived_orbit_root(P, system.values, system.mu0, losses)
        error = np.array([float(abs(mpmath.mpf(float(a)) - b)) for a, b in zip(u, want)]) / (eps * terms)
        assert error.max() <= 1.0, (ratio, error)
        worst = max(worst, error.max())
    assert worst >= 1 / 20
