"""NumPy vs mpmath agreement of the functions lambdified from the derivations."""
import math

import mpmath
import numpy as np
import pytest

from numerics.functions import lambdified as lam

PARAMS = (5.0, 50.0, 50.0, 20.0, 0.7, 1.3, 0.9, 1.1, 0.8, 1.2, 0.0, 0.0)
UNBAL = PARAMS[:10] + (2e-4, -3e-4)
PARAMETERIZATIONS = ("CACO", "CAFO", "FACO", "FAFO")
STATES = [(0.3, 0.2), (2.0, 1.5), (15.0, 4.0), (60.0, 9.0)]


def close(a, b, rtol=1e-12, atol=0.0):
    a, b = float(a), float(b)
    return abs(a - b) <= rtol * abs(b) + atol


def mp(*vals):
    return [mpmath.mpf(v) for v in vals]


@pytest.fixture(autouse=True)
def _dps():
    with mpmath.workdps(40):
        yield


def test_alpha_and_loss():
    fa, fam = lam.alpha_fn(), lam.alpha_fn("mpmath")
    fl, flm = lam.loss_fn(), lam.loss_fn("mpmath")
    for ov, qk in STATES + [(700.0, 30.0), (-1.0, -3.0)]:
        assert close(fa.func(qk, 5.0, 50.0), fam.func(*mp(qk, 5, 50)))
        assert close(fl.func(ov, qk, 5.0, 50.0, 20.0), flm.func(*mp(ov, qk, 5, 50, 20)))
    # loss at a margin of 690: ~1.9e-299, not rounded to 0
    v = lam.loss_of_margin_fn().func(690.0, 20.0)
    assert v > 0 and close(v, lam.loss_of_margin_fn("mpmath").func(*mp(690, 20)))
    # loss of margin 0 is log M
    assert close(lam.loss_of_margin_fn().func(0.0, 20.0), math.log(20))


@pytest.mark.parametrize("param", PARAMETERIZATIONS)
@pytest.mark.parametrize("balanced", [True, False])
def test_rhs_and_jacobian(param, balanced):
    pr = PARAMS if balanced else UNBAL
    f, fm = lam.reduced_rhs(param, balanced), lam.reduced_rhs(param, balanced, "mpmath")
    J, Jm = lam.reduced_jacobian(param, balanced), lam.reduced_jacobian(param, balanced, "mpmath")
    for ov, qk in STATES:
        for a, b in zip(f.func(ov, qk, *pr), fm.func(*mp(ov, qk, *pr))):
            assert close(a, b, 1e-11)
        for a, b in zip(J.func(ov, qk, *pr), Jm.func(*mp(ov, qk, *pr))):
            assert close(a, b, 1e-10, 1e-300)
    # Jacobian vs central differences of the RHS
    ov, qk = 2.0, 1.5
    h = 1e-6
    Jv = np.array(J.func(ov, qk, *pr)).reshape(2, 2)
    dov = (np.array(f.func(ov + h, qk, *pr)) - np.array(f.func(ov - h, qk, *pr))) / (2 * h)
    dqk = (np.array(f.func(ov, qk + h, *pr)) - np.array(f.func(ov, qk - h, *pr))) / (2 * h)
    np.testing.assert_allclose(Jv, np.stack([dov, dqk], axis=1), rtol=1e-6, atol=1e-14)


def test_rhs_vectorized():
    f = lam.reduced_rhs("CACO").func
    ov, qk = np.array([s[0] for s in STATES]), np.array([s[1] for s in STATES])
    d_ov, d_qk = f(ov, qk, *PARAMS)
    for i, (a, b) in enumerate(STATES):
        assert d_ov[i] == f(a, b, *PARAMS)[0] and d_qk[i] == f(a, b, *PARAMS)[1]


@pytest.mark.parametrize("param", PARAMETERIZATIONS)
def test_first_integral_and_orbit(param):
    H, Hm = lam.first_integral_fn(param), lam.first_integral_fn(param, "mpmath")
    R, Rm = lam.orbit_residual_fn(param), lam.orbit_residual_fn(param, "mpmath")
    for ov, qk in STATES:
        assert close(H.func(ov, qk, *PARAMS), Hm.func(*mp(ov, qk, *PARAMS)), 1e-12)
        # a point is on its own orbit
        assert abs(R.func(ov, qk, ov, qk, *PARAMS)) < 1e-9
        assert abs(Rm.func(*mp(ov, qk, ov, qk, *PARAMS))) < mpmath.mpf(10) ** -30
    if param in ("CACO", "CAFO"):
        O, Om = lam.orbit_fn(param), lam.orbit_fn(param, "mpmath")
        for ov in (0.5, 5.0, 80.0, 1e4):
            v = O.func(ov, 0.0, 0.0, *PARAMS)
            # relative 1e-12 away from 0; mu_QK ~ 0 near mu_OV = 0 is absolute-accurate
            assert close(v, Om.func(*mp(ov, 0, 0, *PARAMS)), 1e-12, 1e-15)
            # H is constant along the explicit orbit
            assert close(H.func(ov, v, *PARAMS), H.func(0.0, 0.0, *PARAMS), 1e-9, 1e-9)
    else:
        with pytest.raises(ValueError, match="implicit"):
            lam.orbit_fn(param)


def test_sharpness_functions():
    for L in (1e-300, 1e-5, 1.0, 2.9):
        assert close(lam.margin_at_loss_fn().func(L, 20.0),
                     lam.margin_at_loss_fn("mpmath").func(*mp(L, 20)), 1e-14)
    F, Fm = lam.state_equation_fn(), lam.state_equation_fn("mpmath")
    dF = lam.state_equation_dp_fn()
    for pv, sv, rv in [(0.25, 1.0, 1.0), (3.0, 10.0, 1e-3), (1e3, 600.0, 1e4)]:
        args = (pv, sv, rv, 5.0, 50.0, 50.0, 20.0)
        assert close(F.func(*args), Fm.func(*mp(*args)), 1e-9, 1e-12)
        num = (F.func(pv * (1 + 1e-6), *args[1:]) - F.func(pv * (1 - 1e-6), *args[1:])) / (2e-6 * pv)
        assert close(dF.func(*args), num, 1e-6)
        st, stm = lam.state_from_odds_fn()(*(pv, sv, 5, 50, 50, 20)), lam.state_from_odds_fn("mpmath")(*(pv, sv, 5, 50, 50, 20))
        for k in ("alpha", "mu_QK", "mu_OV"):
            assert close(st[k], stm[k], 1e-13, 1e-300)
        # the u = mu_QK form is the same equation
        u = math.log(50 * pv / 5)
        G = lam.state_equation_mu_fn().func(u, sv, rv, 5.0, 50.0, 50.0, 20.0)[0]
        assert close(G, F.func(*args), 1e-9, 1e-12)


def test_time_integrand():
    f, fm = lam.time_integrand_fn(), lam.time_integrand_fn("CACO", "mpmath")
    for ov in (0.0, 3.0, 100.0):
        pr = (ov, 0.0, 0.0, *PARAMS)
        assert close(f.func(*pr), fm.func(*mp(*pr)), 1e-11)
    # equals 1 / (d mu_OV / dt) at the orbit point
    qk = lam.orbit_fn().func(3.0, 0.0, 0.0, *PARAMS)
    assert close(f.func(3.0, 0.0, 0.0, *PARAMS), 1 / lam.reduced_rhs().func(3.0, qk, *PARAMS)[0], 1e-12)


def test_loss_at_large_negative_margin_is_finite():
    """loss_fn(-1e6, 0) = log(1 + (M-1) e^{-s}) with s = -1e6 m/(m+n): about
    9.09e4, not inf (logaddexp form); reference from mpmath at 40 digits."""
    s = -1e6 * 5 / 55
    ref = mpmath.log(1 + 19 * mpmath.exp(-mpmath.mpf(s)))
    for backend in ("numpy", "math"):
        v = lam.loss_fn(backend)(-1e6, 0.0, m=5, n=50, M=20)
        assert close(v, ref, 1e-14)
    assert close(lam.loss_of_margin_fn()(-1e300, 20.0), 1e300, 1e-15)
    assert lam.loss_of_margin_fn()(1e300, 20.0) == 0.0


def test_math_backend_refuses_special_functions():
    with pytest.raises(ValueError, match="not available for the 'math' backend"):
        lam.orbit_fn("CACO", "math")


def test_builders_validate_names():
    with pytest.raises(ValueError, match="parameterization"):
        lam.reduced_rhs("XYZW")
    with pytest.raises(ValueError, match="circuit"):
        lam.initial_conserved_fn("QV")
    with pytest.raises(ValueError, match="backend"):
        lam.alpha_fn("torch")
    with pytest.raises(ValueError, match="implicit orbit"):
        lam.orbit_fn("FACO")
