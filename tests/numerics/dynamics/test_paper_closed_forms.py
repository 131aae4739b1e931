"""The vectorized bracketed root of the paper's closed forms: per-element status, never a silent NaN."""
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
    assert np.allclose(system.loss(st.mu_OV, st.mu_QK), np.array([0.9, 0.5, 0.1]) * L0, rtol=1e-10)
    with pytest.raises(ValueError, match="mu_QK\\(0\\) > 0"):
        ReducedSystem("FACO", eta_QK=1.0, mu0=(0.0, 0.0)).state_at_loss(0.5)
