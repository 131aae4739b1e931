"""The size bounds of the cache reader (derivations.symbolic.srepr_reader.from_srepr) at their edges: a Float's
binary exponent within +-1024 (the double range: 1e308 and 2.5e-308 are read, 1e309 and 1e-310 refused,
whatever its precision), and a power of numbers by the bits of the base's numerator or denominator, whichever
is larger (3**600 has 951 bits: (1/3**600)**200 is 190200 bits, above 100000)."""
import pytest
import sympy as sp

from derivations.symbolic.srepr_reader import LIMITS, UnsafeExpression, from_srepr


@pytest.mark.parametrize("text", ["1e308", "-1e308", "1e-300", "2.5e-308", "1.0e-307", "123.5"])
@pytest.mark.parametrize("precision", [53, 200])
def test_a_float_within_the_double_range_is_read(text, precision):
    assert from_srepr(f"Float('{text}', precision={precision})") == sp.Float(text, precision=precision)


@pytest.mark.parametrize("text", ["1e309", "-1e309", "1e-310", "1e-400", "1e400"])
def test_a_float_beyond_the_double_range_is_refused(text):
    assert LIMITS["float_exponent"] == 1024
    with pytest.raises(UnsafeExpression, match=r"beyond 2\*\*\(\+-1024\) in magnitude"):
        from_srepr(f"Float('{text}', precision=53)")


def test_a_power_is_bounded_by_the_base_denominators_bits_too():
    assert (3 ** 600).bit_length() == 951 and 951 * 200 > LIMITS["power_bits"] >= 951 * 100
    with pytest.raises(UnsafeExpression, match="power of numbers too large"):
        from_srepr(f"Pow(Rational(1, {3 ** 600}), Integer(200))")
    assert from_srepr(f"Pow(Rational(1, {3 ** 600}), Integer(100))") == sp.Rational(1, 3 ** 60000)


def test_a_power_of_one_is_not_bounded():
    """1 to any power is 1 (no bits to compute): read, whatever the exponent."""
    assert from_srepr("Pow(Integer(1), Integer(10000000))") == 1
    assert from_srepr("Pow(Integer(1), Rational(1, 10000000))") == 1


@pytest.mark.parametrize("text", ["Tuple({code})", "exp({code})", "Abs({code})", "Function('F')({code})",
                                  "Mul(Integer(2), Tuple({code}))", "Integer({code})"])
def test_text_is_read_only_as_a_name_or_digits(text):
    """A constructor other than those of TAKE_TEXT would ``sympify`` a text argument, which evaluates it as
    Python: refused before the call, and the code never runs."""
    import sys
    code = "\"__import__('sys').modules.__setitem__('qkov_evaluated', 1)\""
    with pytest.raises(UnsafeExpression, match="text argument of .* not allowed"):
        from_srepr(text.format(code=code))
    assert "qkov_evaluated" not in sys.modules
