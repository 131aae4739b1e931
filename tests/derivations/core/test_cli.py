"""The one number parser of the command lines (derivations.core.cli.parse_float) and its users."""
import math

import pytest

from derivations.core import UsageError, parse_float, parse_loss, parse_number


def test_parse_float_takes_any_float_and_names_the_parameter():
    assert parse_float("ratio", " 2.5 ") == 2.5
    assert math.isinf(parse_float("ratio", "inf")) and math.isnan(parse_float("ratio", "nan"))
    for bad in ("abc", "", None):
        with pytest.raises(UsageError, match=f"^ratio must be a number; got {bad!r}$"):
            parse_float("ratio", bad)
    with pytest.raises(ValueError, match="^m must be a number"):
        parse_float("m", "x", error=ValueError)


def test_number_and_loss_parsers_report_a_non_number_alike():
    """parse_number and parse_loss read the number with parse_float: the same one line."""
    with pytest.raises(UsageError, match="^eta must be a number; got 'x'$"):
        parse_number("eta", "x")
    with pytest.raises(UsageError, match="^loss must be a number; got 'x'$"):
        parse_loss("x", 20)
    with pytest.raises(UsageError, match="^eta must be finite; got 'inf'$"):
        parse_number("eta", "inf")
