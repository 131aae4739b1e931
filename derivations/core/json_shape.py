"""The shape of a JSON value, declared as data and checked without reading it as code.

A cache file's entries (:class:`derivations.core.expression_cache.ExpressionStore`) are checked
against the shape of a complete file before anything in them is used: a missing entry, an entry
too many, or a value of another type is damage, as a digest that does not match is.

A shape is one of:

* a type (``str``, ``int``, ``float``, ``bool``): a value of exactly that type (JSON's ``true`` is
  not an ``int``);
* ``None``: the value ``null``;
* a ``frozenset``: one of its members (``frozenset({"=", "~"})``);
* a ``tuple``: any of its shapes (``(None, str)``: ``null`` or a string);
* a one-item ``list`` ``[s]``: a list whose every item has shape ``s``; a longer ``list``: a list of
  exactly that length, item ``i`` of shape ``i`` (``[str, int]``);
* a ``dict``: an object with exactly its keys, each value of the shape given.

Plain Python at import, as the rest of :mod:`derivations.core`.

>>> matches({"lhs": None, "expr": "Integer(1)"}, {"lhs": (None, str), "expr": str})
True
>>> matches({"expr": "Integer(1)"}, {"lhs": (None, str), "expr": str})
False
>>> matches([["a", 1], ["b", "c"]], [[str, (str, int)]])
True
"""
from __future__ import annotations

__all__ = ["matches"]


def matches(value, shape) -> bool:
    """Whether the JSON value ``value`` has the shape ``shape`` (the module docstring's forms).

    Parameters
    ----------
    value : object
        A JSON value (as :func:`json.loads` returns it).
    shape : type, None, frozenset, tuple, list or dict
        The declared shape.

    Returns
    -------
    bool

    Raises
    ------
    TypeError
        If ``shape`` is none of the forms.
    """
    if shape is None:
        return value is None
    if isinstance(shape, type):
        return type(value) is shape
    if isinstance(shape, frozenset):
        return isinstance(value, (str, int, float, bool)) and value in shape
    if isinstance(shape, tuple):
        return any(matches(value, s) for s in shape)
    if isinstance(shape, list):
        if not isinstance(value, list):
            return False
        if len(shape) == 1:
            return all(matches(v, shape[0]) for v in value)
        return len(value) == len(shape) and all(matches(v, s) for v, s in zip(value, shape))
    if isinstance(shape, dict):
        return isinstance(value, dict) and value.keys() == shape.keys() and all(
            matches(v, shape[k]) for k, v in value.items())
    raise TypeError(f"shape must be a type, None, a frozenset, a tuple, a list or a dict; got {shape!r}")
