"""solve_reduced: first integrals, crossings vs closed forms, validation."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from numerics import lambdified as lam
from numerics.closed_form import state_at_loss
from numerics.reduced_ode import ReducedResult, solve_reduced

PARAMETERIZATIONS = ("CACO", "CAFO", "FACO", "FAFO")


def H_drift(res):
    """max |H(t) - H(0)| relative to the magnitude of H's terms along the
    trajectory (H itself can be a small difference of large terms)."""
    from derivations.first_integral import first_integral
    p = res.params
    pr = (p["m"], p["n"], p["b"], p["M"], p["eta_QK"], p["eta_OV"], p["eta_Q"], p["eta_K"],
          p["eta_O"], p["eta_V"], p["C_QK"], p["C_OV"])
    H = np.asarray(lam.first_integral_fn(res.parameterization).func(res.mu_OV, res.mu_QK, *pr),
                   dtype=float)
    terms = lam.numeric(first_integral(res.parameterization).args,
                        (lam.mu_OV, lam.mu_QK, *lam.PARAMS), stable=False)
    scale = sum(np.abs(np.broadcast_to(np.asarray(v, dtype=float), H.shape))
                for v in terms.func(res.mu_OV, res.mu_QK, *pr))
    return float(np.max(np.abs(H - H[0])) / np.max(scale))


@pytest.mark.parametrize("param", PARAMETERIZATIONS)
def test_first_integral_paper_setting(param):
    res = solve_reduced(param, eta_QK=2.0, eta_OV=0.5, target_loss=1e-3)
    assert isinstance(res, ReducedResult) and res.success and res.status == 1
    assert res.balanced
    assert abs(res.loss[-1] - 1e-3) < 1e-9
    assert H_drift(res) < 1e-8


@settings(max_examples=6, deadline=None)
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
    for i, L in enumerate(thresholds):
        c = res.crossings[L]
        assert abs(c["loss"] - L) <= 1e-9 * L
        for k in ("mu_OV", "mu_QK", "alpha"):
            assert abs(c[k] - getattr(cf, k)[i]) <= 1e-9 * abs(getattr(cf, k)[i])


def test_crossings_with_t_eval_and_unreached_thresholds():
    res = solve_reduced("CACO", t_span=(0, 1e5), t_eval=np.linspace(0, 1e5, 11),
                        loss_thresholds=[2.9, 1e-3])
    assert res.status == 0 and res.t.shape == (11,)
    assert 2.9 in res.crossings and 1e-3 not in res.crossings
    np.testing.assert_allclose(res.alpha, 5 * np.exp(res.mu_QK) / (5 * np.exp(res.mu_QK) + 50))


def test_terminal_state_appended_with_t_eval():
    res = solve_reduced("CACO", t_eval=np.linspace(0, 1e9, 5), target_loss=0.5)
    assert res.status == 1 and res.t[-1] == res.crossings[0.5]["t"]
    assert abs(res.loss[-1] - 0.5) < 1e-9


def test_tiny_loss_stable():
    res = solve_reduced("CACO", eta_QK=10.0, target_loss=1e-12, loss_thresholds=[1e-8])
    assert res.status == 1 and abs(res.loss[-1] / 1e-12 - 1) < 1e-8
    assert np.all(res.loss > 0)


def test_unbalanced_factorized_uses_conserved_quantities():
    res = solve_reduced("FAFO", eta_Q=2.0, eta_K=0.5, eta_O=1.0, eta_V=3.0, eps=0.1,
                        target_loss=0.1)
    assert not res.balanced and res.status == 1
    assert res.params["C_QK"] == pytest.approx(0.01 * (1 / 2.0 - 1 / 0.5))
    assert res.params["C_OV"] == pytest.approx(0.01 * (1 / 1.0 - 1 / 3.0))
    assert res.mu_OV[0] == pytest.approx(0.01 / math.sqrt(50))
    assert res.mu_QK[0] == pytest.approx(0.01 / 50)


def test_jacobian_methods_agree():
    a = solve_reduced("FACO", target_loss=0.01, method="LSODA")
    c = solve_reduced("FACO", target_loss=0.01)
    assert abs(a.crossings[0.01]["t"] / c.crossings[0.01]["t"] - 1) < 1e-6


@pytest.mark.parametrize("kw,match", [
    (dict(parameterization="XX"), "parameterization"),
    (dict(eta_QK=-1.0), "eta_QK"), (dict(eta_V=0.0), "eta_V"), (dict(eps=np.inf), "eps"),
    (dict(m=0.0), "m"), (dict(M=1), "M"),
    (dict(target_loss=math.log(20)), r"target_loss.*\(0, log M\)"),
    (dict(target_loss=-0.1), "target_loss"),
    (dict(loss_thresholds=[0.5, 4.0]), "loss_thresholds"),
    (dict(t_span=(0, -1), target_loss=0.1), "t_span"),
    (dict(), "t_span"),
    (dict(mu0=(0.0, np.nan), target_loss=0.1), "mu0"),
])
def test_invalid_inputs(kw, match):
    kw = dict(kw)
    param = kw.pop("parameterization", "CACO")
    with pytest.raises(ValueError, match=match):
        solve_reduced(param, **kw)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(param=st.sampled_from(PARAMETERIZATIONS),
       m=st.floats(0.5, 20), n=st.floats(5, 200), b=st.floats(2, 200),
       M=st.integers(2, 50), eta_QK=st.floats(0.05, 20), eta_OV=st.floats(0.05, 20),
       eps=st.floats(1e-3, 0.3), frac=st.floats(0.01, 0.8))
def test_first_integral_random_parameters_exhaustive(param, m, n, b, M, eta_QK, eta_OV, eps, frac):
    test_first_integral_random_parameters.hypothesis.inner_test(
        param, m, n, b, M, eta_QK, eta_OV, eps, frac)
