"""The master curve (numerics/dynamics/crossover.py) where its small shares are near the rounding of 1: large
Lambda, against references that do not use the master flow."""
from __future__ import annotations

import pytest

from numerics.dynamics import master_shares, ratio_of_lambda


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
