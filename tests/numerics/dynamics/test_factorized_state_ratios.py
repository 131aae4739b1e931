"""The paper's factorized state at a loss (``state_at_loss(..., parameterization=P)``, the orbit through the
paper's initialization met by the margin) against an independent route: the reduced ODEs as derived
(``derivations.tasks.paper.reduction.reduced_odes``, lambdified here by SymPy) integrated by SciPy's DOP853
at rtol 1e-13 to the event loss = L (the loss written log1p((M - 1) e^{-alpha mu_OV}), no cancellation),
over the ratios print_dynamics accepts, [1e-12, 1e12], where that route is cheap: up to 1e6 (at 1e6 up to
loss 1.0; beyond, the QK coordinate relaxes so fast that explicit steps crawl). Tolerance: 1e-9 relative on
both coordinates (measured at most 6e-11)."""
import functools

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from numerics.dynamics import state_at_loss

SETTING = dict(m=5, n=50, b=50, M=20)
EPS = 1e-2                                     # the paper's initialization scale (ReducedSystem's eps)


@functools.lru_cache(maxsize=None)
def _flow(P):
    import sympy as sp

    from derivations.symbolic.symbols import SYMBOLS as S
    from derivations.tasks.paper import reduction
    subs = {S[k]: v for k, v in SETTING.items()}
    rates = tuple(S[k] for k in ("eta_Q", "eta_K", "eta_QK", "eta_O", "eta_V", "eta_OV"))
    rhs = sp.lambdify((S["mu_OV"], S["mu_QK"], *rates),
                      [e.subs(subs) for e in reduction.reduced_odes(P, balanced=True)], "numpy")
    margin = sp.lambdify((S["mu_OV"], S["mu_QK"]), (S["mu_OV"] * reduction.alpha_expr()).subs(subs), "numpy")
    return rhs, margin


def _reference(P, ratio, loss):
    """(mu_OV, mu_QK) where the flow from the paper's initialization first reaches ``loss``, in
    s = log(1 + t) (the flow slows like 1/t)."""
    rhs, margin = _flow(P)
    rates = (ratio,) * 3 + (1.0,) * 3
    b = SETTING["b"]
    y0 = [EPS ** 2 / np.sqrt(b) if P[2] == "F" else 0.0, EPS ** 2 / b if P[0] == "F" else 0.0]

    def at_loss(s, y):
        return np.log1p((SETTING["M"] - 1) * np.exp(-margin(*y))) - loss
    at_loss.terminal = True
    sol = solve_ivp(lambda s, y: np.exp(s) * np.asarray(rhs(*y, *rates), dtype=float), (0.0, 300.0), y0,
                    method="DOP853", rtol=1e-13, atol=1e-22, events=at_loss)
    assert sol.status == 1, sol.message
    return sol.y_events[0][0]


CASES = [(r, loss) for r in (1e-12, 1e-6, 1.0, 1e3) for loss in (2.99, 1.0, 0.1, 1e-8)] + [(1e6, 2.99), (1e6, 1.0)]
#: The default suite checks every loss at both ends of the ratio range and at ratio 1 (each
#: parameterization); the ratios between them (1e-6, 1e3) are the same comparison again (-m slow).
REPRESENTATIVE_RATIOS = (1e-12, 1.0, 1e6)


@pytest.mark.parametrize("P", ["FAFO", "FACO", "CAFO"])
@pytest.mark.parametrize("ratio, loss", [pytest.param(r, loss, marks=() if r in REPRESENTATIVE_RATIOS else
                                                      pytest.mark.slow) for r, loss in CASES])
def test_factorized_state_at_loss_matches_the_integrated_reduced_flow(P, ratio, loss):
    st = state_at_loss(loss, ratio, parameterization=P)
    want = _reference(P, ratio, loss)
    np.testing.assert_allclose([float(st.mu_OV), float(st.mu_QK)], want, rtol=1e-9, atol=0)
