"""The one bracketing search in a logarithm (numerics/dynamics/sign_change.py): roots, ties, one
sign, undefined values, the bound on its steps."""
from __future__ import annotations

import math

import pytest

from numerics.dynamics import log_sign_change


@pytest.mark.parametrize("root", [1e-3, 0.37, 12.5, 4e4])
def test_finds_the_sign_change_either_way(root):
    for sign in (1.0, -1.0):
        x, reason = log_sign_change(lambda x: sign * math.log(x / root), 1e-4, 1e5, xtol=1e-12)
        assert reason is None and x == pytest.approx(root, rel=1e-10, abs=0)


def test_an_exact_zero_at_an_end_is_returned_and_a_tie_is_named():
    assert log_sign_change(lambda x: x - 2.0, 2.0, 10.0)[0] == pytest.approx(2.0, rel=1e-15, abs=0)
    calls = []
    high = math.exp(math.log(10.0))                   # the point searched (10 + 2e-15)
    x, reason = log_sign_change(lambda x: calls.append(x) or x - high, 2.0, 10.0)
    assert reason is None and x == high and len(calls) == 2          # the high end, no search
    x, reason = log_sign_change(lambda x: 0.0, 1.0, 10.0, name="ratio")
    assert x is None and reason.startswith("tie") and "ratio in [1, 10]" in reason


def test_one_sign_undefined_and_no_convergence_are_reasons():
    assert log_sign_change(lambda x: -1.0, 1.0, 10.0)[1].startswith("not reached within the ratio range")
    x, reason = log_sign_change(lambda x: math.nan if x > 5 else -1.0, 1.0, 10.0, name="ratio")
    assert x is None and reason.startswith("undefined at ratio = 10")
    calls = []
    x, reason = log_sign_change(lambda x: calls.append(x) or x - 3.0, 1.0, 1e3, xtol=1e-15, maxiter=3)
    assert x is None and reason.startswith("no convergence in 3 steps") and len(calls) <= 2 + 3


@pytest.mark.parametrize("low, high, kw, name", [
    (0.0, 1.0, {}, r"\(low, high\)"), (1.0, 0.5, {}, r"\(low, high\)"), (math.nan, 1.0, {}, r"\(low, high\)"),
    (1.0, math.inf, {}, r"\(low, high\)"), (-1.0, 1.0, {}, r"\(low, high\)"),
    (0.1, 1.0, {"xtol": -1.0}, "xtol"), (0.1, 1.0, {"xtol": 0.0}, "xtol"), (0.1, 1.0, {"xtol": math.nan}, "xtol"),
    (0.1, 1.0, {"maxiter": None}, "maxiter"), (0.1, 1.0, {"maxiter": 1.5}, "maxiter")])
def test_bad_search_arguments_are_a_value_error_naming_them(low, high, kw, name):
    """Never a math domain error or SciPy's message: the argument and its range are named."""
    with pytest.raises(ValueError, match=f"^{name} must be"):
        log_sign_change(lambda x: x - 0.5, low, high, **kw)


def test_reasons_show_ends_and_points_apart():
    """The ends of a range of nearby numbers and the point where the difference is undefined are shown apart
    (15 digits, typed ends as typed): at 6 digits [1.0000001, 1.0000002] was shown '[1, 1]'."""
    low, high = 1.0000001, 1.0000002
    for difference, shown in [(lambda x: 1.0, f"ratio in [{low!r}, {high!r}]"),
                              (lambda x: 0.0, f"ratio in [{low!r}, {high!r}]"),
                              (lambda x: math.nan if x > low * 1.00000005 else 1.0, f"= {high!r}")]:
        x, reason = log_sign_change(difference, low, high, name="ratio")
        assert x is None and shown in reason, reason
    x, reason = log_sign_change(lambda x: x - 1.00000015, low, high, xtol=1e-300, maxiter=0, name="ratio")
    near = float(reason.rpartition("near ")[2].rstrip(")"))
    assert x is None and reason.startswith("no convergence") and low <= near <= high, reason
