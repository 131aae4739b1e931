"""The one range check of the numeric methods (numerics/validation.py) and where it is used."""
from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from numerics.validation import as_numbers, check_in_range, check_positive_values, check_result, shown_number


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


def test_a_subnormal_number_is_shown_at_the_digits_it_holds():
    """A subnormal double holds fewer than 15 significant digits: shown as the shortest text that reads back
    as it (as typed), not at 15 digits (1e-320 was shown as 9.99988867182683e-321); a normal one at 15."""
    typed = ["1e-320", "-2.5e-310", "5e-324", "2.225e-308"]
    assert [shown_number(float(t)) for t in typed] == typed
    assert [shown_number(v) for v in (np.float64(1e-320), np.array(-1e-320), 0.1 + 0.2, 2.2250738585072014e-308)] == \
        ["1e-320", "-1e-320", "0.3", "2.2250738585072e-308"]
    with pytest.raises(ValueError, match=r"\]; got 1e-320$"):
        check_in_range("m", 1e-320, 1e-8, 1e8)


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
                 lambda: state_at_loss_mpmath(loss, 2.0), lambda: margin_at_loss(loss, 4),
                 lambda: state_at_loss(loss, 2.0, parameterization="FAFO")):     # the paper's orbits
        with pytest.raises(ValueError, match=r"^loss must be .*in \(0, log M\).*; got "):
            call()


#: Numbers, alone or in lists and arrays: taken as floats by every check.
NUMBERS = [(2, 2.0), (0.5, 0.5), (np.float32(0.5), 0.5), (np.int64(3), 3.0), (np.float16(0.5), 0.5),
           (np.longdouble(0.5), 0.5), (Fraction(1, 2), 0.5), (Decimal("0.5"), 0.5), (2 ** 70, 2.0 ** 70),
           ([Fraction(1, 2), Decimal("2")], [0.5, 2.0]), (np.array([1, 2], dtype=object), [1.0, 2.0]),
           ([[np.float32(0.5)], [Fraction(3, 2)]], [[0.5], [1.5]]), ([], [])]
#: What is not a number, and how the message shows it.
NOT_NUMBERS = [(True, "True"), (np.bool_(False), "False"), ([True, 2.0], "[True, 2.0]"), ("0.5", "'0.5'"),
               (["1"], "['1']"), (b"1", "b'1'"), (None, "None"), ([1.0, None], "[1.0, None]"),
               (1 + 0j, "(1+0j)"), (np.complex128(1), "np.complex128(1+0j)"), (10 ** 400, "1" + "0" * 400),
               (Fraction(10 ** 400), str(10 ** 400)), ([[1.0], [1.0, 2.0]], "[[1.0], [1.0, 2.0]]"),
               (np.datetime64("2020-01-01"), "np.datetime64('2020-01-01')"),
               (np.timedelta64(1, "s"), "np.timedelta64(1,'s')"), ({}, "{}")]


@pytest.mark.parametrize("value, expected", NUMBERS, ids=[f"number{i}" for i in range(len(NUMBERS))])
def test_as_numbers_is_the_one_test_of_a_number(value, expected):
    """``as_numbers`` and ``check_positive_values`` (which calls it) take the same numbers: Fraction and
    Decimal were taken by the second and refused by the first (with "got 0.5" for Fraction(1, 2))."""
    x = as_numbers("b", value, "finite and > 0")
    assert x.dtype == np.float64 and x.tolist() == expected
    if np.size(x):
        assert check_positive_values("b", value).tolist() == expected
        assert check_in_range("b", value, 0.1, 1e30).tolist() == expected


@pytest.mark.parametrize("value, shown", NOT_NUMBERS, ids=[shown[:20] for _, shown in NOT_NUMBERS])
def test_what_is_not_a_number_is_refused_alike_naming_it(value, shown):
    """check_positive_values took numpy's complex (dropping its imaginary part) and dates, raised an
    OverflowError for 10**400 and NumPy's message for a ragged list; as_numbers raised a TypeError for a
    timedelta. Each is now the ValueError of both, naming the parameter and the value."""
    with pytest.raises(ValueError) as info:
        as_numbers("b", value, "finite and > 0")
    assert str(info.value) == f"b must be finite and > 0; got {shown}"
    with pytest.raises(ValueError) as info:
        check_positive_values("b", value)
    assert str(info.value) == f"b must be finite numbers > 0; got {shown}"


@pytest.mark.parametrize("value, shown", NOT_NUMBERS, ids=[shown[:20] for _, shown in NOT_NUMBERS])
def test_times_points_and_ranges_refuse_what_is_not_a_number(value, shown):
    """check_t_span, check_point, check_times and check_positive_range took text and booleans as numbers
    (``float("1")``) and raised an OverflowError for 10**400; check_loss_level too for 10**400, and the
    paper's orbits (state_at_loss of a factorized parameterization) and the closed form of a task mapped
    onto the paper's took ``"0.5"`` and ``True`` as a ratio. Each is a ValueError naming the parameter."""
    from numerics.dynamics import state_at_loss
    from numerics.validation import check_loss_level, check_point, check_positive_range, check_t_span, check_times
    for call, name in ((lambda: check_t_span((0.0, value)), "t_span"),
                       (lambda: check_point("mu0", (value, 0.0)), "mu0"),
                       (lambda: check_times("t_eval", [0.0, value]), "t_eval"),
                       (lambda: check_positive_range("ratio_range", (1.0, value)), "ratio_range"),
                       (lambda: check_loss_level("target_loss", value, 20), "target_loss"),
                       (lambda: state_at_loss(0.5, value, parameterization="CAFO"), "ratio"),
                       (lambda: state_at_loss(0.5, value, task="shared-irrelevant"), "ratio")):
        with pytest.raises(ValueError, match=rf"^{name} must be "):
            call()


def test_points_and_spans_show_a_wrong_value_as_typed():
    """check_point, check_t_span and check_positive_range share one shape check, whose message shows a
    NumPy number as the user would type it (check_point showed ``np.float64(0.5)``)."""
    from numerics.validation import check_point, check_positive_range, check_t_span
    for call, message in ((lambda: check_point("mu0", np.float64(0.5)),
                           "mu0 must be two finite numbers (mu_OV, mu_QK); got 0.5"),
                          (lambda: check_point("mu0", (1.0, math.inf)),
                           "mu0 must be two finite numbers (mu_OV, mu_QK); got (1.0, inf)"),
                          (lambda: check_t_span(np.float64(2.0)), "t_span must be (t0, t1) with t1 > t0; got 2"),
                          (lambda: check_positive_range("ratio_range", [1.0, 2.0, 3.0]),
                           "ratio_range must be (low, high) with 0 < low < high < inf; got [1.0, 2.0, 3.0]")):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == message


@pytest.mark.parametrize("value, shown", [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf"), (0, "0"),
                                          (-1, "-1"), (Fraction(-1, 2), "-0.5"), (Decimal("NaN"), "Decimal('NaN')"),
                                          ([1.0, 2.0, -3.0, math.nan], "-3"), (Fraction(1, 10 ** 400), "0")])
def test_a_number_that_is_not_positive_and_finite_is_named(value, shown):
    """The message names the first bad entry, as check_in_range's does (it showed the whole input)."""
    with pytest.raises(ValueError) as info:
        check_positive_values("ratio", value)
    assert str(info.value) == f"ratio must be finite numbers > 0; got {shown}"


def test_the_callers_take_fractions_and_decimals_and_name_what_is_not_a_number():
    """lambda_of_ratio (check_positive_values) took Fraction; master_shares (check_in_range) refused it
    saying "got 0.5": both take it now, and refuse a numpy complex alike."""
    from numerics.dynamics.crossover import lambda_of_ratio, master_shares
    assert lambda_of_ratio(Fraction(2), 0.5, 20, Decimal(50)) == lambda_of_ratio(2.0, 0.5, 20, 50.0)
    shares = master_shares(Fraction(1, 2), s=Fraction(2), m=Decimal(5), n=10, R=5)
    assert shares == master_shares(0.5, s=2, m=5, n=10, R=5)
    with pytest.raises(ValueError, match=r"^ratio must be finite numbers > 0; got np.complex128"):
        lambda_of_ratio(np.complex128(2), 0.5, 20, 50)
    with pytest.raises(ValueError, match=r"^Lambda must be in \(0, .*; got np.complex128"):
        master_shares(np.complex128(2), s=2, m=5, n=10, R=5)


def test_an_integer_may_equal_its_maximum():
    from numerics.validation import check_int
    assert check_int("epochs", 10 ** 9, 1, 10 ** 9) == 10 ** 9 and check_int("epochs", 1, 1, 10 ** 9) == 1
    with pytest.raises(ValueError, match=r"^epochs must be an integer in \[1, 1000000000\]; got 1000000001$"):
        check_int("epochs", 10 ** 9 + 1, 1, 10 ** 9)


@pytest.mark.parametrize("value", [[True, Fraction(1, 2)], [Decimal("0.5"), np.bool_(False)], [Fraction(1, 3), True]])
def test_a_boolean_among_other_numbers_is_refused(value):
    with pytest.raises(ValueError, match="^x must be numbers; got "):
        as_numbers("x", value, "numbers")


def test_a_scalar_parameter_comes_back_as_a_float():
    for value in (0.5, 1, np.float32(0.5), np.array(0.5), Fraction(1, 2)):
        out = check_in_range("loss", value, 0.0, 1.0, scalar=True)
        assert type(out) is float and out == float(value)


def test_target_losses_need_a_finite_class_count_one_loss_at_least_and_each_alone_a_number():
    from numerics.validation import check_loss_level, check_target_losses
    assert check_target_losses("target_loss", np.array(0.5), 20).tolist() == [0.5]
    assert check_target_losses("target_loss", [0.5, 0.1], 20).tolist() == [0.5, 0.1]
    for M in (math.inf, math.nan, 1, True):
        with pytest.raises(ValueError, match="^M must be a finite number > 1; got "):
            check_target_losses("target_loss", 0.5, M)
    for empty in ([], (), np.array([])):
        with pytest.raises(ValueError, match=r"^target_loss must name at least one loss in \(0, log M\)"):
            check_target_losses("target_loss", empty, 20)
    for not_one in ([0.5], np.array([0.5]), "0.5"):
        with pytest.raises(ValueError, match=r"^loss must be in \(0, log M\)"):
            check_loss_level("loss", not_one, 20)
