"""The one range check of the numeric methods (numerics/validation.py) and where it is used."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from numerics.validation import check_in_range, check_result, shown_number


def test_values_in_range_come_back_as_floats():
    assert check_in_range("ratio", [1, 2.5], 1.0, 50.0).tolist() == [1.0, 2.5]
    assert check_in_range("loss", 0.5, 1e-8, 1.0, hi_open=True).ndim == 0


@pytest.mark.parametrize("bad, shown", [
    (True, "True"), ("2", "'2'"), (None, "None"), ([1.0, "a"], "[1.0, 'a']"),
    (math.nan, "nan"), (math.inf, "inf"), (0.5, "0.5"), (51, "51"), ([2.0, 60.0, 70.0], "60"),
    (np.float64(1e300), "1e+300"),
])
def test_anything_else_is_refused_naming_the_first_bad_entry(bad, shown):
    """Booleans and text are not numbers (``float(True)`` would pass); the message shows the
    value as typed, the range and why it is the range."""
    with pytest.raises(ValueError) as info:
        check_in_range("ratio", bad, 1.0, 50.0, "(the range it is tested on)")
    assert str(info.value) == f"ratio must be in [1, 50] (the range it is tested on); got {shown}"


def test_the_upper_end_can_be_open():
    assert check_in_range("rtol", 0.5, 1e-13, 1.0, hi_open=True) == 0.5
    with pytest.raises(ValueError, match=r"^rtol must be in \[1e-13, 1\); got 1$"):
        check_in_range("rtol", 1.0, 1e-13, 1.0, hi_open=True)


def test_the_lower_end_can_be_open():
    assert check_in_range("Lambda", 1e-300, 0.0, 1e14, lo_open=True) == 1e-300
    with pytest.raises(ValueError, match=r"^Lambda must be in \(0, 1e\+14\]; got 0$"):
        check_in_range("Lambda", 0.0, 0.0, 1e14, lo_open=True)


@pytest.mark.parametrize("value, shown", [(math.inf, "inf"), (0.0, "0"), (np.array([1.0, math.inf]), "inf"),
                                          (math.nan, "nan")])
def test_a_result_double_precision_cannot_hold_is_refused_naming_its_inputs(value, shown):
    x = np.array([2.0, 1e200]) if np.ndim(value) else 1e200
    with pytest.raises(ValueError) as info:
        check_result("y = x^2", value, {"x": x}, "x at most 1e154")
    assert str(info.value) == ("y = x^2 must be a finite number > 0 (at most 1.8e308, at least 5e-324); "
                               f"got {shown} at x=1e+200 (x at most 1e154)")


def test_a_result_in_range_is_returned_as_is():
    value = np.float64(3.0)
    assert check_result("y", value, {}) is value


@pytest.mark.parametrize("bad, shown", [([], "[]"), ([0.5], "[0.5]"), (np.array([0.5, 0.6]), "array")])
def test_a_scalar_parameter_refuses_a_sequence(bad, shown):
    """``float(check_in_range(...))`` of an empty list was NumPy's TypeError, of ``[0.5]`` a silent 0.5."""
    assert check_in_range("rtol", 0.5, 1e-13, 1.0, scalar=True) == 0.5
    with pytest.raises(ValueError, match=rf"^rtol must be in \[1e-13, 1\]; got {re.escape(shown)}"):
        check_in_range("rtol", bad, 1e-13, 1.0, scalar=True)


@pytest.mark.parametrize("call", [
    lambda: __import__("numerics.experiments.theory", fromlist=["check_ratio"]).check_ratio([]),
    lambda: __import__("numerics.experiments.theory", fromlist=["check_ratio"]).check_ratio([1.0]),
    lambda: __import__("numerics.output.files", fromlist=["check_dpi"]).check_dpi([100]),
    lambda: __import__("numerics.dynamics", fromlist=["solve_reduced"]).solve_reduced("FAFO", eps=[0.1], target_loss=0.5),
])
def test_the_scalar_parameters_refuse_a_sequence(call):
    with pytest.raises(ValueError, match=r"^\w+ must be in \["):
        call()


def test_a_bound_is_shown_in_full_where_the_short_form_is_not_exact():
    with pytest.raises(ValueError, match=r"must be in \[1e-08, 2.995732273553991\)"):
        check_in_range("loss", 3.0, 1e-8, math.log(20), hi_open=True)


def test_numbers_are_shown_as_typed():
    assert [shown_number(v) for v in (7, np.int64(7), 0.1, np.float64(2.5), np.array(3.0), False, "x")] == \
        ["7", "7", "0.1", "2.5", "3", "False", "'x'"]


@pytest.mark.parametrize("call, message", [
    (lambda: __import__("numerics.dynamics", fromlist=["state_at_loss"]).state_at_loss(0.5, True),
     "ratio must be in [1e-12, 1e+12] for the closed-form state (the range it is verified on); got True"),
    (lambda: __import__("numerics.experiments.theory", fromlist=["check_ratio"]).check_ratio(1e6),
     "ratio must be in [0.001, 50] (the range the expected-count flow answers in bounded time); got 1000000"),
    (lambda: __import__("numerics.output.files", fromlist=["check_dpi"]).check_dpi(5),
     "dpi must be in [10, 2400]; got 5"),
    (lambda: __import__("numerics.verify", fromlist=["check_ratios"]).check_ratios([1.0, 1e5]),
     "ratios must be in [0.0001, 10000] (beyond, the full model's flow cannot be integrated in bounded time); "
     "got 100000"),
])
def test_the_methods_say_their_ranges_through_it(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


@pytest.mark.parametrize("loss", [True, "0.5", [0.5, "x"], None, [[0.5], [0.5, 0.6]]])
def test_a_loss_that_is_not_a_number_is_refused_by_every_closed_form_path(loss):
    """``np.asarray(loss, dtype=float)`` took ``True`` as loss 1 and ``"0.5"`` as 0.5: the loss is a number
    or an array of numbers (``as_numbers``), else a ValueError naming it and its range."""
    from numerics.dynamics import state_at_loss, time_to_loss
    from numerics.dynamics.closed_form import state_at_loss_mpmath
    from numerics.dynamics.crossover import margin_at_loss
    for call in (lambda: state_at_loss(loss, 2.0), lambda: time_to_loss(loss, 2.0),
                 lambda: state_at_loss_mpmath(loss, 2.0), lambda: margin_at_loss(loss, 4)):
        with pytest.raises(ValueError, match=r"^loss must be .*in \(0, log M\).*; got "):
            call()
