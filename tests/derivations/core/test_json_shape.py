"""The declared shape of a JSON value (the cache files' entries are checked against it)."""
import pytest

from derivations.core.json_shape import matches

ENTRY = {"lhs": (None, str), "relation": frozenset({"=", "~"}), "pattern": [[str, [(str, int)]]]}


@pytest.mark.parametrize("value,expected", [
    ({"lhs": None, "relation": "=", "pattern": []}, True),
    ({"lhs": "Integer(1)", "relation": "~", "pattern": [["q", ["c", 0]], ["r", ["c", "d", 1]]]}, True),
    ({"relation": "=", "pattern": []}, False),                                   # a key missing
    ({"lhs": None, "relation": "=", "pattern": [], "x": 1}, False),              # a key too many
    ({"lhs": 1, "relation": "=", "pattern": []}, False),                         # neither None nor str
    ({"lhs": None, "relation": "<", "pattern": []}, False),                      # not a member
    ({"lhs": None, "relation": ["="], "pattern": []}, False),                    # unhashable, not a member
    ({"lhs": None, "relation": "=", "pattern": [["q"]]}, False),                 # a pair of one
    ({"lhs": None, "relation": "=", "pattern": [["q", ["c", 0], 1]]}, False),    # a pair of three
    ({"lhs": None, "relation": "=", "pattern": [["q", ["c", True]]]}, False),    # JSON true is not an int
    ({"lhs": None, "relation": "=", "pattern": [["q", ["c", 0.5]]]}, False),
    ({"lhs": None, "relation": "=", "pattern": {"q": 1}}, False),                # an object, not a list
    ([], False), (None, False)])
def test_a_value_matches_its_declared_shape_only(value, expected):
    assert matches(value, ENTRY) is expected


def test_a_shape_of_no_known_form_is_a_type_error():
    with pytest.raises(TypeError, match="shape must be"):
        matches(1, lambda v: True)
