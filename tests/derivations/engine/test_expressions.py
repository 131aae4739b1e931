"""The safe reader of a task's text values (issue 25, items 6-8): no Python is run, sizes are bounded."""
import time

import pytest
import sympy as sp

from derivations.engine.expressions import MAX_TEXT, parse_expression
from derivations.engine.task import Task, TokenGroup
from derivations.symbolic.symbols import m, n
from derivations.tasks import get_task

NAMES = {"m": m, "n": n}


def test_text_is_never_run_as_python(tmp_path):
    target = tmp_path / "x"
    text = f"__import__('os').system('touch {target}') or m"
    with pytest.raises(ValueError, match="multiplicity .*not an expression"):
        TokenGroup("r", per_class=True, multiplicity=text)
    for text in ("m.real", "m[0]", "lambda: m", "m if m else n", "m, n", "m = 1", "exp(m)", "m @ n", "m ^ 2"):
        with pytest.raises(ValueError):
            parse_expression(text, NAMES)
    assert not target.exists()


def test_a_20000_term_text_is_a_value_error_not_a_recursion_error():
    text = "+".join(["m"] * 20000)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=f"longer than {MAX_TEXT} characters"):
        TokenGroup("r", per_class=True, multiplicity=text)
    with pytest.raises(ValueError, match="nested deeper"):
        parse_expression("(" * 300 + "m" + ")" * 300, NAMES)
    with pytest.raises(ValueError, match="nested deeper"):
        parse_expression("-" * 300 + "m", NAMES)
    assert time.perf_counter() - t0 < 1


@pytest.mark.parametrize("text, value", [
    ("m / 2 + 3", m / 2 + 3), ("-(m - n)**2", -(m - n) ** 2), ("0.5*m", m / 2), ("1e3", 1000),
    ("2**-1", sp.Rational(1, 2)), ("m**2**2", m ** 4), ("+m", m), ("(m)*(n)/(m+n)", m * n / (m + n)),
])
def test_arithmetic_is_read_exactly(text, value):
    assert parse_expression(text, NAMES) == value


@pytest.mark.parametrize("value", [1e300, 10 ** 30, m ** 1000, "m**1000", "1e300", "10**30", "2**60",
                                   "m / 9007199254740992 / 9007199254740992", "(1/9007199254740992)**2"])
def test_numbers_and_exponents_are_bounded(value):
    with pytest.raises(ValueError, match="out of range|exponents must be"):
        TokenGroup("r", per_class=True, multiplicity=value)


@pytest.mark.parametrize("text, says", [
    ("1e-30*m", "its denominator of 31 digits is above 2**53"), ("1e-31*m", "its denominator is at least 10**31"),
    ("0.12345678901234567", "its numerator 12345678901234567 and denominator 100000000000000000 are above"),
    ("(1/10)**16", "number 1/10**16 is out of range (a number in an expression is read exactly, as a fraction"),
    ("1e20*m", "number 1e20 is out of range (numbers in an expression are at most 2**53 in magnitude)$"),
    ("1e31", "(numbers in an expression are at most 2**53 in magnitude)$")])
def test_a_number_out_of_range_is_named_with_what_is_out_of_range(text, says):
    """1e-30 is tiny: read exactly it is 1/10**30, and it is the denominator that exceeds 2**53, not
    the magnitude (the message said "magnitude at most 2**53")."""
    import re
    with pytest.raises(ValueError, match=re.escape(says.rstrip("$")) + ("$" if says.endswith("$") else "")) as info:
        parse_expression(text, NAMES)
    assert ("magnitude" in str(info.value)) == ("magnitude" in says)


def test_an_exponent_is_a_number_of_magnitude_at_most_16():
    """MAX_EXPONENT at both ends, on a symbol's power (no bound on numbers or degree decides it)."""
    assert parse_expression("m**16", NAMES) == m ** 16 and parse_expression("m**-16", NAMES) == m ** -16
    for text in ("m**17", "m**-17", "m**(33/2)", "m**n"):
        with pytest.raises(ValueError, match=r"^exponents must be numbers of magnitude at most 16"):
            parse_expression(text, NAMES)


@pytest.mark.parametrize("text", ["(m", "(m + n", "((m)", "m * (n"])
def test_a_parenthesis_left_open_at_the_end_is_a_value_error(text):
    with pytest.raises(ValueError, match="^a parenthesis is not closed$"):
        parse_expression(text, NAMES)


@pytest.mark.parametrize("text", ["m / 0", "m / (n - n)", "1 / (2 - 2) + m", "0**-1"])
def test_a_division_by_zero_is_refused_not_read_as_complex_infinity(text):
    with pytest.raises(ValueError, match="^division by zero$"):
        parse_expression(text, NAMES)

@pytest.mark.parametrize("text", ["99999**(99999/122743)", "(2/3)**(999999999/100000000)", "2**(9999999/1000000)",
                                  "(4306/2151)**(2/119695)", "2151**(-2/119695)"])
def test_a_power_of_numbers_is_bounded_by_its_exponents_numerator_and_denominator(text):
    """SymPy raises the base to the exponent's numerator (or, for a fraction or a negative exponent,
    nearly its denominator) before it takes the root: 99999**(99999/122743), within every bound by the
    exponent's value, kept a task file's reader busy for minutes."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="a power of numbers too large to compute"):
        TokenGroup("r", per_class=True, multiplicity=text)
    assert time.perf_counter() - t0 < 1
    assert parse_expression("10**(15/2)", NAMES) == 10 ** 7 * sp.sqrt(10)


@pytest.mark.parametrize("text, degree", [("((m+1)**8+1)**8", 64), ("m**16*n**16*(m+n)**16*(m-n)**16", 64),
                                          ("1/(m**16*n**16*(m+n)**16*(m-n)**16*(m+1))", 65), ("((m+1)**8+1)**9", 72),
                                          ("(((m+1)**16+1)**16+1)**16", 4096)])
def test_the_degree_is_bounded_through_nested_powers(text, degree):
    """Exponents multiply through nested powers: SymPy's sign analysis of a degree-4096 text of 27
    characters runs for minutes and gigabytes; the degree is bounded instead."""
    from derivations.engine.expressions import MAX_DEGREE, degree as degree_of
    if degree <= MAX_DEGREE:
        assert degree_of(parse_expression(text, NAMES, known_only=False)) == degree
        return
    t0 = time.perf_counter()
    for build in (lambda: parse_expression(text, NAMES, known_only=False),
                  lambda: TokenGroup("r", per_class=True, multiplicity=text)):
        with pytest.raises(ValueError, match=f"degree {degree}, above {MAX_DEGREE}"):
            build()
    assert time.perf_counter() - t0 < 2


def test_unknown_names_are_refused_by_the_task():
    with pytest.raises(ValueError, match="unknown symbols x"):
        Task("t", "", (TokenGroup("q", per_class=True), TokenGroup("r", per_class=True, multiplicity="x * m")),
             query="q")
    with pytest.raises(ValueError, match="unknown symbol 'x'"):
        parse_expression("x", NAMES)


@pytest.mark.parametrize("task, values", [
    ("paper", {"M": 1000}), ("paper", {"M": 100000}), ("shared-irrelevant", {"n_c": 10 ** 12}),
    ("shared-irrelevant", {"n_c": 100000}),
])
def test_sizes_are_checked_before_anything_is_built(task, values):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="token types and .* count entries"):
        get_task(task).instance(values=values)
    assert time.perf_counter() - t0 < 1


def test_many_types_through_the_api_are_refused_at_once():
    task = Task("t", "", (TokenGroup("q", per_class=True), TokenGroup("r", per_class=True, multiplicity=m),
                          TokenGroup("u", per_class=False, multiplicity=1, types=5000)), query="q")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="5040 token types"):
        task.instance(M=20)
    assert time.perf_counter() - t0 < 1


@pytest.mark.parametrize("values", [{"m": 1e19}, {"m": 1e300}, {"n": 1e300}])
def test_huge_counts_are_refused_not_overflowing(values):
    with pytest.raises(ValueError, match="more than 2\\*\\*53"):
        get_task("paper").instance(M=3, values=values)


def test_a_root_of_the_largest_number_is_computed_and_one_beyond_refused():
    """The bound is a number of 2**53 (54 bits) to the 16th: its 16th root is 2**(53/16) = 8 * 2**(5/16);
    its 17th root (54 x 17 bits) is beyond."""
    assert parse_expression("9007199254740992**(1/16)", NAMES) == 8 * sp.Integer(2) ** sp.Rational(5, 16)
    with pytest.raises(ValueError, match="a power of numbers too large to compute"):
        parse_expression("9007199254740992**(1/17)", NAMES)
