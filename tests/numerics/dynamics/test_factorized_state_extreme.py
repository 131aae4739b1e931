"""The paper's factorized state at a loss at large ratios (1e9 and up), where integrating the reduced ODEs
in time crawls, against an independent high-precision route: the orbit of the reduced ODEs as derived
(``derivations.tasks.paper.reduction.reduced_odes``). Their quotient d mu_QK / d mu_OV is checked here in
SymPy to separate, ``g(mu_QK) mu_OV**(j-1)`` (j = 2 for a collapsed OV circuit, else 1), so the orbit from
the paper's initialization (x0, u0) is ``int_{u0}^{u} dv/g(v) = (x**j - x0**j)/j``; mpmath's quadrature
(40 digits) gives the left side and a bracketed root in mpmath the point where it meets the margin
alpha(u) x = s(L) (s from the loss written from its definition, log(1 + (M-1) e^{-s}) = L). Tolerance:
1e-13 relative on both coordinates (measured at most 1.2e-15 from 1e9 to 1e300). Above 1e12, the top
of the range the state is tested on, ``state_at_loss`` refuses the ratio; the closed form beyond it
(``ReducedSystem.state_at_loss``) is checked by the slow grid, up to 1e300."""
import functools

import numpy as np
import pytest

from numerics.dynamics import state_at_loss
from numerics.dynamics.reduced_system import ReducedSystem

SETTING = dict(m=5, n=50, b=50, M=20)
EPS2 = "1e-4"                                 # the square of the paper's initialization scale (eps = 1e-2)


@functools.lru_cache(maxsize=None)
def _orbit_parts(P):
    import sympy as sp

    from derivations.symbolic.symbols import SYMBOLS as S
    from derivations.tasks.paper import reduction
    x, u, r = S["mu_OV"], S["mu_QK"], sp.Symbol("r", positive=True)
    subs = {**{S[k]: v for k, v in SETTING.items()},
            **{S[k]: r for k in ("eta_Q", "eta_K", "eta_QK")}, **{S[k]: 1 for k in ("eta_O", "eta_V", "eta_OV")}}
    fx, fu = (e.subs(subs) for e in reduction.reduced_odes(P, balanced=True))
    j = 2 if P[2] == "C" else 1
    g = sp.simplify(fu / fx / x ** (j - 1))
    assert sp.simplify(sp.diff(g, x)) == 0, g          # the orbit separates
    m, n = SETTING["m"], SETTING["n"]
    return sp.lambdify((u, r), 1 / g, "mpmath"), (lambda v: m * mpmath.exp(v) / (m * mpmath.exp(v) + n)), j


mpmath = pytest.importorskip("mpmath")


def _reference(P, ratio, loss, guess):
    """(mu_OV, mu_QK) on the orbit from the paper's initialization where the loss is ``loss``, in mpmath;
    ``guess``: a point near the root (the bracket grows from it)."""
    inv_g, alpha, j = _orbit_parts(P)
    with mpmath.workdps(40):
        b, M, eps2 = (mpmath.mpf(v) for v in (SETTING["b"], SETTING["M"], EPS2))
        x0 = eps2 / mpmath.sqrt(b) if P[2] == "F" else mpmath.mpf(0)
        u0 = eps2 / b if P[0] == "F" else mpmath.mpf(0)
        r = mpmath.mpf(ratio)
        s = -mpmath.log(mpmath.expm1(mpmath.mpf(loss)) / (M - 1))

        def integral(lo, hi):          # pieces of width 8 (e^v varies by e^8 on each), log-spaced near u0
            pts, p = [lo], max(lo, mpmath.mpf("1e-8"))
            while p * 4 < min(hi, 1):
                p *= 4
                pts.append(p)
            k = mpmath.floor(pts[-1]) + 8
            while k < hi:
                pts.append(k)
                k += 8
            return mpmath.quad(lambda v: inv_g(v, r), pts + [hi])

        a = mpmath.mpf(guess) * (1 - mpmath.mpf("1e-9"))
        base = integral(u0, a)

        def residual(uu):
            return base + mpmath.quad(lambda v: inv_g(v, r), [a, uu]) - ((s / alpha(uu)) ** j - x0 ** j) / j
        assert residual(a) < 0
        hi = mpmath.mpf(guess) * (1 + mpmath.mpf("1e-9"))
        while residual(hi) < 0:
            hi = a + 2 * (hi - a)
        u = mpmath.findroot(residual, (a, hi), solver="illinois", tol=mpmath.mpf(10) ** -60)
        return float(s / alpha(u)), float(u)


def _check(P, ratio, loss, st):
    got = [float(st.mu_OV), float(st.mu_QK)]
    np.testing.assert_allclose(got, _reference(P, ratio, loss, got[1]), rtol=1e-13, atol=0)


@pytest.mark.parametrize("P, ratio, loss", [("FAFO", 1e12, 1.0), ("FACO", 1e9, 2.99), ("CAFO", 1e12, 1e-8)])
def test_factorized_state_at_large_ratios_matches_the_orbit_in_mpmath(P, ratio, loss):
    _check(P, ratio, loss, state_at_loss(loss, ratio, parameterization=P))


@pytest.mark.parametrize("P", ["FAFO", "FACO", "CAFO"])
def test_factorized_state_refuses_ratios_above_the_tested_range(P):
    with pytest.raises(ValueError, match=r"ratio must be .*1e\+12"):
        state_at_loss(1.0, 1.0001e12, parameterization=P)
    with pytest.raises(ValueError, match="ratio"):
        state_at_loss(1.0, 1.7e308, parameterization=P)     # was an overflow and an ArithmeticError
    state_at_loss(1.0, 1e12, parameterization=P)            # the top is accepted


@pytest.mark.slow
@pytest.mark.parametrize("P", ["FAFO", "FACO", "CAFO"])
@pytest.mark.parametrize("ratio", [1e9, 1e12, 1e15, 1e30, 1e100, 1e300])
@pytest.mark.parametrize("loss", [2.99, 1.0, 0.1, 1e-8])
def test_factorized_closed_form_matches_the_orbit_in_mpmath_to_1e300(P, ratio, loss):
    _check(P, ratio, loss, ReducedSystem(P, eta_QK=ratio, **SETTING).state_at_loss(loss))
