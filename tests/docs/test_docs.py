"""Run the doctest examples of docs/usage.md."""
import doctest
from pathlib import Path

USAGE = Path(__file__).resolve().parents[2] / "docs" / "usage.md"


def test_usage_examples():
    result = doctest.testfile(str(USAGE), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                              verbose=False, raise_on_error=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples in {USAGE} failed"
    assert result.attempted >= 10
