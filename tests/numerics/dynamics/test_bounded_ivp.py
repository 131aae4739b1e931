"""numerics.dynamics.bounded_ivp: the bounded step loop stops, saying why, where SciPy's would not."""
import time
import warnings

import numpy as np
import pytest

from numerics.dynamics import ReducedSystem, solve_bounded


@pytest.mark.parametrize("method", ["DOP853", "RK45", "RK23"])
def test_a_derivative_that_overflows_at_the_start_stops_at_once(method):
    """exp(1000) at the start: SciPy's first step would loop forever on a NaN step size."""
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_bounded(lambda t, y: np.exp(y), (0.0, 1.0), np.array([1000.0]), method=method)
    assert time.monotonic() - started < 5
    assert (res.status, res.reason) == (-1, "nonfinite") and "start" in res.message
    assert res.t.tolist() == [0.0] and res.y.tolist() == [[1000.0]]


def test_an_overflow_error_of_the_right_hand_side_is_a_nonfinite_derivative():
    """Python's float arithmetic (a task's lambdified flow with a huge own parameter: a file's
    ``[parameters] s = 1e300`` in ``b**2 * s**2``) raises OverflowError instead of giving inf; it escaped
    the solver, and state_at_loss raised it. It is a non-finite derivative, reported as one."""
    def fun(t, y):
        return np.array([-(float(y[0]) + 1e154) ** 2])
    res = solve_bounded(fun, (0.0, 1.0), np.array([1e200]))        # at the start
    assert (res.status, res.reason) == (-1, "nonfinite") and "start" in res.message
    res = solve_bounded(fun, (0.0, 1.0), np.array([0.0]))          # on the way: the solver's steps fail
    assert res.status == -1 and res.reason in ("nonfinite", "failed")


def test_a_factorized_system_starting_beyond_the_double_range_fails_at_once():
    """FACO's balanced start mu_QK = eps^2 / b is 1e4 at b = 1e-8 (numerics.verify --params b=1e-8):
    its right-hand side overflows, and the integration reports it instead of running without end."""
    system = ReducedSystem("FACO", m=5, n=50, b=1e-8, M=20, eta_QK=1.0, eta_OV=1.0, eps=1e-2)
    started = time.monotonic()
    res = system.integrate(rtol=1e-13, atol=1e-20, target_loss=0.1)
    assert time.monotonic() - started < 5
    assert res.status == -1 and "non-finite derivative at the start" in str(res.message)


def test_a_level_crossed_after_the_terminal_one_in_the_same_step_is_not_recorded():
    """y' = -y from 1: the terminal level y = 0.5 is reached at log 2, the level 0.4999 only at log(1/0.4999),
    after the run ended, though inside the solver's last step: it is not reached."""
    res = solve_bounded(lambda t, y: -y, (0.0, np.inf), np.array([1.0]),
                        levels=lambda y: [y[0] - 0.5, y[0] - 0.4999], terminal=0, rtol=1e-10, atol=1e-12)
    assert res.status == 1 and res.hits[1] is None
    assert res.hits[0][0] == pytest.approx(np.log(2.0), rel=1e-9) and res.t[-1] == res.hits[0][0]


def test_an_unbounded_run_that_ends_at_the_horizon_without_its_level_fails():
    """y' = 0 never reaches y = 0.5: integrated over (0, inf) it ends at HORIZON, which is a failure
    (status -1, reason "horizon"), not the end of the interval asked for."""
    from numerics.dynamics.bounded_ivp import HORIZON
    res = solve_bounded(lambda t, y: np.zeros(1), (0.0, np.inf), np.array([1.0]),
                        levels=lambda y: [y[0] - 0.5], terminal=0)
    assert (res.status, res.reason) == (-1, "horizon") and res.hits == [None]
    assert res.t[-1] == HORIZON and "not reached" in res.message


def test_a_crossing_at_a_tiny_time_is_located_to_a_few_ulp_of_it():
    """y' = -y / 1e-20 crosses y = 1/2 at 1e-20 log 2: brentq's absolute xtol (4 eps = 9e-16) left the
    crossing anywhere in its step. Now the level's state is 1/2 to 1e-12, its time to 1e-12."""
    tau = 1e-20
    res = solve_bounded(lambda t, y: -y / tau, (0.0, np.inf), np.array([1.0]), levels=lambda y: [y[0] - 0.5],
                        terminal=0, rtol=1e-12, atol=1e-14)
    t_hit, y_hit = res.hits[0]
    assert res.status == 1 and abs(y_hit[0] - 0.5) < 1e-12 and t_hit == pytest.approx(tau * np.log(2), rel=1e-12, abs=0)


def test_a_crossing_on_a_step_of_few_doubles_of_t_is_located_on_the_step_integrated_again():
    """y' = -y / 1e4 from t = 1e17 (the descent after a long plateau): doubles of t are 16 apart, a step
    a few thousand, so the crossing of y = 1/2 located on them was off by up to 16 / 1e4 of y. The step
    integrated again in its own time from its start locates it: y = 1/2 to 1e-12, t to two doubles."""
    t0, tau = 1e17, 1e4
    res = solve_bounded(lambda t, y: -y / tau, (t0, np.inf), np.array([1.0]), levels=lambda y: [y[0] - 0.5],
                        terminal=0, rtol=1e-12, atol=1e-14)
    t_hit, y_hit = res.hits[0]
    assert res.status == 1 and abs(y_hit[0] - 0.5) < 1e-12 and res.y[-1][0] == y_hit[0]
    assert abs(t_hit - (t0 + tau * np.log(2))) <= 2 * np.spacing(t0)


def test_a_crossing_not_found_on_the_step_integrated_again_is_a_failure(monkeypatch):
    """Where the step integrated again does not cross the level, the run stops before that step
    with status -1 (reason "unresolved") and no hit: never the coarse state as the crossing."""
    from numerics.dynamics import bounded_ivp
    solve = bounded_ivp._solve

    def missing(*args, again):
        run = solve(*args, again=again)
        if not again:       # the step integrated again
            run.hits = [None]
        return run
    monkeypatch.setattr(bounded_ivp, "_solve", missing)
    res = solve_bounded(lambda t, y: -y / 1e4, (1e17, np.inf), np.array([1.0]), levels=lambda y: [y[0] - 0.5],
                        terminal=0, rtol=1e-12, atol=1e-14)
    assert (res.status, res.reason, res.hits) == (-1, "unresolved", [None])
    assert "\n" not in res.message and "not resolved" in res.message and res.y[-1][0] > 0.5


def test_a_crossing_on_a_step_of_a_few_million_doubles_of_t_is_located_on_the_step_integrated_again():
    """y' = -y / 10 from t = 1e12: doubles of t are 1.2e-4 apart, a step of about 1 spans some 2**13 of them
    (below RESOLVED_DOUBLES = 2**40), so the crossing of y = 1/2 located on them is off by up to 1e-5 of y. It
    is located on the step integrated again: y = 1/2 to 1e-12, t = t0 + 10 log 2 to two doubles."""
    t0, tau = 1e12, 10.0
    res = solve_bounded(lambda t, y: -y / tau, (t0, np.inf), np.array([1.0]), levels=lambda y: [y[0] - 0.5],
                        terminal=0, rtol=1e-12, atol=1e-14)
    t_hit, y_hit = res.hits[0]
    assert res.status == 1 and abs(y_hit[0] - 0.5) < 1e-12
    assert abs(t_hit - (t0 + tau * np.log(2))) <= 2 * np.spacing(t0)


def test_nfev_counts_every_evaluation_the_steps_integrated_again_included():
    calls = []

    def fun(t, y):
        calls.append(t)
        return -y / 1e4
    res = solve_bounded(fun, (1e17, np.inf), np.array([1.0]), levels=lambda y: [y[0] - 0.5], terminal=0,
                        rtol=1e-12, atol=1e-14)
    assert res.status == 1 and res.nfev == len(calls)


def test_a_finite_interval_ends_at_its_end_with_status_0():
    """y' = -y over (0, 1) without a terminal level: status 0, reason "end", y(1) = 1/e (to 1e-9)."""
    res = solve_bounded(lambda t, y: -y, (0.0, 1.0), np.array([1.0]), rtol=1e-11, atol=1e-13)
    assert (res.status, res.reason) == (0, "end") and res.t[-1] == 1.0
    assert res.y[-1][0] == pytest.approx(np.exp(-1.0), rel=1e-9)


def test_a_level_after_the_terminal_one_not_found_on_the_step_integrated_again_is_no_failure(monkeypatch):
    """y' = -y / 1e4 from t = 1e17 crosses y = 0.5 (terminal) and y = 0.4999 (2 time units later) in one step
    of few doubles of t. The step integrated again finds the terminal crossing and (here) not the other: that
    one lies after the run's end and is not reached, so the run ends at its terminal level, not "unresolved"."""
    from numerics.dynamics import bounded_ivp
    solve = bounded_ivp._solve
    looked_for = []

    def missing_the_second(fun, t_span, y0, t_eval, levels, *args, again):
        run = solve(fun, t_span, y0, t_eval, levels, *args, again=again)
        if not again and levels(y0)[0] == y0[0] - 0.4999:      # the second level's step integrated again
            looked_for.append(1)
            run.hits = [None]
        return run
    monkeypatch.setattr(bounded_ivp, "_solve", missing_the_second)
    res = solve_bounded(lambda t, y: -y / 1e4, (1e17, np.inf), np.array([1.0]),
                        levels=lambda y: [y[0] - 0.5, y[0] - 0.4999], terminal=0, rtol=1e-12, atol=1e-14)
    assert looked_for and (res.status, res.reason) == (1, "terminal") and res.hits[1] is None
    assert abs(res.hits[0][1][0] - 0.5) < 1e-12
