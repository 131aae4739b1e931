"""The master curve and its coordinate (numerics/dynamics/crossover.py) where doubles are at their limits: small
shares at large Lambda, the margin near log M, a shape of tiny numbers; against references that do not use the
master flow."""
from __future__ import annotations

import math

import numpy as np
import pytest

from numerics.dynamics import lambda_of_ratio, margin_at_loss, master_shares, ratio_of_lambda


@pytest.mark.parametrize("lam", [1e2, 1e10, 1e14])
def test_the_small_share_at_large_lambda_is_the_closed_forms(lam):
    """The paper's task (s = 0): the other share at the stopping loss is 1/(1 + p), p the attention odds of the
    closed-form state solved in mpmath (closed_form.state_at_loss_mpmath, 50 digits) at r = r(Lambda, L, M, b),
    to 1e-8 relative (measured: 5e-10). With Y - U as a difference in doubles it was 5.2e-8 off at Lambda =
    1e10 and 2.6e-5 at 1e14 (and took 2 s there)."""
    from numerics.dynamics.closed_form import state_at_loss_mpmath
    m, n, L, M, b = 5.0, 50.0, 1e-3, 1e6, 1.0       # Lambda = 1e14 at a ratio the closed form covers (2.3e11)
    state = state_at_loss_mpmath(L, float(ratio_of_lambda(lam, L, M, b)), m=m, n=n, M=M, b=b)
    other = float(1 / (1 + state["p"]))
    got = master_shares(lam, s=0, m=m, n=n, R=1)
    assert float(got["other_attention"]) == pytest.approx(other, rel=1e-8, abs=0)
    assert float(got["relevant_attention"]) == pytest.approx(float(state["alpha"]), rel=0, abs=1e-8 * other + 2e-16)


@pytest.mark.parametrize("M, d", [(20, 1e-9), (20, 1e-12), (20, 1e-15), (4, 1e-12), (2**20, 1e-12), (2, 0.5),
                                  (20, 2.9)])
def test_the_margin_and_lambda_are_the_derived_ones(M, d):
    """l(L) and Lambda a distance d below log M, against the derivation's own expressions
    (derivations.tasks.crossover: margin_of_loss, and Lambda solved from ratio_of_lambda = r) evaluated by
    SymPy at 40 digits at the same double L: numerics types them in doubles, so this is what ties the two.
    In doubles without the mpmath fallback the margin was 5e-8 off (M = 20, d = 1e-9), 6e-5 (1e-12) and 0.18
    (1e-15), and Lambda and the crossover ratio twice that."""
    import sympy as sp
    from derivations.tasks.crossover import Lambda, margin_of_loss, ratio_of_lambda as derived_ratio
    L = math.log(M) - d
    Ls, Ms, bs, rs = sp.Float(L, 60), sp.Integer(M), sp.Integer(50), sp.Integer(3)
    margin = float(margin_of_loss(Ls, Ms).evalf(40))
    (lam_expr,) = sp.solve(sp.Eq(derived_ratio(Lambda, Ls, Ms, bs), rs), Lambda)
    lam = float(lam_expr.evalf(40))
    assert float(margin_at_loss(L, M)) == pytest.approx(margin, rel=1e-15, abs=0)
    assert float(lambda_of_ratio(3.0, L, M, 50)) == pytest.approx(lam, rel=1e-14, abs=0)
    assert float(ratio_of_lambda(lam, L, M, 50)) == pytest.approx(float(derived_ratio(sp.Float(lam, 60), Ls, Ms, bs)
                                                                           .evalf(40)), rel=1e-14, abs=0)


def test_a_shape_of_tiny_numbers_is_its_scaled_shape():
    """The shares depend on s : m : n only: at s = m = n = 1e-200 they are those at 1, to the flow's integration
    rtol (1e-10: the two integrations round differently and may step differently; 1.0e-12 apart with SciPy 1.15, the
    declared floor, 6e-13 with 1.17); m**2 underflowed in the flow's time bound (ZeroDivisionError)."""
    tiny = master_shares([0.1, 10.0], s=1e-200, m=1e-200, n=1e-200, R=2)
    one = master_shares([0.1, 10.0], s=1, m=1, n=1, R=2)
    for key in one:
        np.testing.assert_allclose(tiny[key], one[key], rtol=1e-10, atol=0)
