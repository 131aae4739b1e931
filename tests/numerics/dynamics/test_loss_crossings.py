"""The reduced flow stops where the loss is its target, at small b and from a small relevant share too,
against references that integrate nothing in double precision: the paper's CACO orbit in mpmath, and the
closed-form orbits of the factorized circuits."""
import math

import mpmath
import numpy as np
import pytest

from derivations.core import PARAMETERIZATIONS
from numerics.dynamics import solve_reduced


def caco_reference(L, *, m=5.0, n=50.0, b=50.0, M=20, r=1.0):
    r"""``(mu_OV, mu_QK, t)`` where the CACO flow from zero (eta_OV = 1, eta_QK = r) reaches loss L, at
    40 digits. Its orbit (docs/theory.md) is :math:`p + \log p = m/n + \log(m/n) + c\mu_{OV}^2`,
    :math:`c = r(M-1)/(2Mb)`, with the odds :math:`p = m e^{\mu_{QK}}/n` (so p = W(e^K), Lambert's W),
    the loss is :math:`\log(1 + (M-1)e^{-s})` at the margin :math:`s = \alpha\mu_{OV}`, and the time is
    :math:`\int_0^{\mu_{OV}} b (e^{\alpha x} + M - 1)/\alpha \, dx` along the orbit."""
    with mpmath.workdps(40):
        m, n, b, M, r, L = (mpmath.mpf(v) for v in (m, n, b, M, r, L))
        K0, c = m / n + mpmath.log(m / n), r * (M - 1) / (2 * M * b)
        s = mpmath.log((M - 1) / mpmath.expm1(L))
        # at the target: p + log p - K0 = c s^2 (1 + 1/p)^2, increasing in q = log p: a bracket, then its root
        def h(q):
            return mpmath.exp(q) + q - K0 - c * s**2 * (1 + mpmath.exp(-q))**2
        lo = hi = mpmath.log(c * s**2 + abs(K0) + 1)
        while h(lo) > 0:
            lo -= 2 * abs(lo) + 1
        while h(hi) < 0:
            hi += 2 * abs(hi) + 1
        for _ in range(200):        # bisection: 2^-200 of the bracket
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if h(mid) < 0 else (lo, mid)
        lp = (lo + hi) / 2
        p = mpmath.exp(lp)
        x_end = s * (1 + p) / p

        def alpha(x):
            odds = mpmath.lambertw(mpmath.exp(K0 + c * x**2)).real
            return odds / (1 + odds)
        def rate(x, a):                     # the integrand at x, with a = alpha(x) (a Lambert W: once a point)
            return b * (mpmath.exp(a * x) + M - 1) / a
        t = mpmath.quad(lambda x: rate(x, alpha(x)), mpmath.linspace(0, x_end, 5))
        return float(x_end), float(lp + mpmath.log(n / m)), float(t)


def stable_loss(mu_OV, mu_QK, m, n, M):
    """The loss at a state, at 40 digits."""
    with mpmath.workdps(40):
        alpha = 1 / (1 + n * mpmath.exp(-mpmath.mpf(mu_QK)) / m)
        return float(mpmath.log1p((M - 1) * mpmath.exp(-alpha * mpmath.mpf(mu_OV))))


def assert_at_target(res, L, **model):
    """Status 1 and the state's loss within 1e-12 of the target (the recorded last state too)."""
    assert res.status == 1 and res.reason == "terminal", res.message
    st = res.target_state
    setting = {"m": 5.0, "n": 50.0, "M": 20, **model}
    loss = stable_loss(st["mu_OV"], st["mu_QK"], setting["m"], setting["n"], setting["M"])
    assert abs(loss / L - 1) < 1e-12, (loss, L)
    assert (res.mu_OV[-1], res.mu_QK[-1]) == (st["mu_OV"], st["mu_QK"])


@pytest.mark.parametrize("b", [1e-14, 1e-16, 1e-30])
@pytest.mark.parametrize("L", [2.5, 1.0])
def test_caco_at_a_small_b_stops_at_its_target(b, L):
    """At b = 1e-16 the flow stopped at loss 2.536 for the target 2.5 (1e-14: 2.50006; 1e-30: 2.519) with
    status 1: its crossing was located to brentq's absolute xtol 4 eps = 9e-16 on a time of 1e-15. State
    and time against the mpmath orbit: 1e-9."""
    res = solve_reduced("CACO", b=b, target_loss=L)
    assert_at_target(res, L)
    mu_OV, mu_QK, t = caco_reference(L, b=b)
    st = res.target_state
    assert st["mu_OV"] == pytest.approx(mu_OV, rel=1e-9) and st["mu_QK"] == pytest.approx(mu_QK, rel=1e-9)
    assert st["t"] == pytest.approx(t, rel=1e-9, abs=0)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("b, L", [(1e-8, 2.5), (1e-10, 1.0), (1e-12, 1e-3)])
def test_cafo_at_a_small_b_stops_at_its_target(b, L):
    """CAFO (its mu_OV starts at eps^2 / sqrt(b)) stopped at loss 2.49978 for 2.5 at b = 1e-8 and at 0.914
    for 1.0 at b = 1e-10, with status 1. The state against the closed-form orbit through its start: 1e-9,
    found without a warning (the orbit's underflowed omega is a bracket's sign, not a fault)."""
    res = solve_reduced("CAFO", b=b, target_loss=L)
    assert_at_target(res, L)
    ref = res.system.state_at_loss(L)
    assert res.target_state["mu_OV"] == pytest.approx(float(ref.mu_OV), rel=1e-9)
    assert res.target_state["mu_QK"] == pytest.approx(float(ref.mu_QK), rel=1e-9)


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
@pytest.mark.parametrize("L", [2.5, 1e-3])
def test_a_small_relevant_share_at_the_start_stops_at_its_target(P, L):
    """From m / (m + n) = 2e-12 the loss stays near log M until t = 1e14 to 5e15 and then falls within a
    few thousand time units, steps of a few thousand doubles of t: the crossing located on them was off
    by up to a tenth of a step (FACO stopped at 2.4975, FAFO at 9.9958e-4 for 1e-3, CACO at 2.4999985),
    with status 1. The state against the mpmath orbit (CACO) or the closed-form orbit: 1e-9."""
    m = 1e-10
    res = solve_reduced(P, m=m, target_loss=L)
    assert_at_target(res, L, m=m)
    if P == "CACO":
        mu_OV, mu_QK, _ = caco_reference(L, m=m)
    else:
        ref = res.system.state_at_loss(L)
        mu_OV, mu_QK = float(ref.mu_OV), float(ref.mu_QK)
    assert res.target_state["mu_OV"] == pytest.approx(mu_OV, rel=1e-9)
    assert res.target_state["mu_QK"] == pytest.approx(mu_QK, rel=1e-9)


@pytest.mark.parametrize("P, m", [("CACO", 1e-14), ("FACO", 1e-12), ("FAFO", 1e-12)])
def test_a_descent_too_fast_for_the_doubles_of_t_is_a_failure_in_one_line(P, m):
    """Below m / (m + n) of about 1e-13 the descent after the plateau is shorter than the solver's
    smallest step at that t: status -1, no target state, one line naming t, the loss and the share."""
    res = solve_reduced(P, m=m, target_loss=1e-3)
    assert res.status == -1 and res.reason == "failed" and res.target_state is None
    assert "\n" not in res.message and "relevant share at the start" in res.message
    assert f"{m / (m + 50):.3g}" in res.message and "too fast for the doubles near t" in res.message


@pytest.mark.parametrize("P", ["FACO", "FAFO"])
def test_a_factorized_start_beyond_the_doubles_names_it(P):
    """A factorized QK circuit starts at mu_QK = eps^2 / b = 1e4 at b = 1e-8, where exp overflows:
    status -1, one line naming the start, b and eps."""
    res = solve_reduced(P, b=1e-8, target_loss=1.0)
    assert res.status == -1 and res.reason == "nonfinite" and res.target_state is None
    assert "\n" not in res.message and "mu_QK=10000; b=1e-08, eps=0.01)" in res.message


@pytest.mark.parametrize("d", [1e-9, 1e-12, 1e-15])
def test_a_target_near_the_initial_loss_is_located_on_the_loss_in_mpmath(d):
    """A target d below log M (the initial loss): in doubles the loss there is log M to a few ulp, and the
    state was off by 1.5e-7 (d = 1e-9), 9e-4 (1e-12) and 0.7 (1e-15), with status 1. Against the mpmath
    orbit: 1e-9. Also a threshold that near, on the way to a lower target."""
    L = math.log(20) - d
    mu_OV, mu_QK, _ = caco_reference(L, r=10.0)
    res = solve_reduced("CACO", eta_QK=10.0, target_loss=L)
    st = res.target_state
    assert res.status == 1 and st["mu_OV"] == pytest.approx(mu_OV, rel=1e-9, abs=0)
    assert st["mu_QK"] == pytest.approx(mu_QK, rel=1e-9, abs=0)
    [crossing] = solve_reduced("CACO", eta_QK=10.0, loss_thresholds=[L], target_loss=2.5).crossings
    assert crossing["mu_OV"] == pytest.approx(mu_OV, rel=1e-9, abs=0)


def test_a_target_near_the_initial_loss_of_a_task_is_located_on_the_loss_in_mpmath():
    """The same on the run-time lambdified flow (the paper's task as the engine reduces it), through
    state_at_loss's reduced flow: 9e-4 off at d = 1e-12 (the mpmath orbit: 1e-9)."""
    from numerics.dynamics import state_at_loss
    L = math.log(20) - 1e-12
    mu_OV, mu_QK, _ = caco_reference(L, r=10.0)
    st = state_at_loss(L, 10.0, task="paper", method="reduced flow")
    assert float(st.mu_OV) == pytest.approx(mu_OV, rel=1e-9, abs=0)
    assert float(st.mu_QK) == pytest.approx(mu_QK, rel=1e-9, abs=0)


def test_a_target_a_rounding_below_the_initial_loss_is_not_already_reached():
    """FAFO at eps = 3e-3 starts 1.1e-7 below log M, at a loss 6e-16 above its value in doubles: that value as
    the target stopped the run at the start ("already <= target_loss"); it is reached later, where the loss
    at 40 digits is the target to an ulp."""
    from numerics.dynamics.reduced_system import ReducedSystem
    system = ReducedSystem("FAFO", eta_QK=10.0, eps=3e-3)
    L = float(system.loss(*system.mu0))
    res = system.integrate(target_loss=L)
    st = res.target_state
    assert res.status == 1 and st["t"] > 0, res.message
    assert stable_loss(st["mu_OV"], st["mu_QK"], 5.0, 50.0, 20) == pytest.approx(L, rel=2.3e-16, abs=0)
