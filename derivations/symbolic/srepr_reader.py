"""Rebuild SymPy expressions from ``sympy.srepr`` text without ``eval``.

The derivation cache (:mod:`derivations.catalog`) stores every result as the
``srepr`` of its expression tree. Reading it back with ``eval`` (or with
``sympify``/``parse_expr``, which evaluate Python too) would let a cache file
run arbitrary code. :func:`from_srepr` instead parses the text with
:func:`ast.parse` and rebuilds the tree from a whitelist:

* calls of the SymPy classes and functions in :data:`ALLOWED_CALLS` (with
  ``expm1``/``log1p`` of ``sympy.codegen.cfunctions``) and of the project's
  own :class:`~derivations.symbolic.special_functions.wright_omega`;
* ``Function('F')(...)`` (undefined functions, for left-hand sides), named by a Python
  identifier (a code printer writes the name as it is);
* the SymPy singletons in :data:`ALLOWED_NAMES` (``oo``, ``pi``, ...);
* arguments that are such calls, ints, a negated int, or strings where a constructor takes
  a name or a ``Float``'s digits (:data:`TAKE_TEXT`; any other would evaluate the text as Python);
* keyword arguments that are assumptions with a ``True``/``False`` value, or
  ``precision=<int>`` of ``Float``.

Anything else (attribute access, other names, lambdas, subscripts, ...)
raises :class:`UnsafeExpression` before a single constructor is called, and
so does text beyond the size bounds (:data:`LIMITS`: length, nesting depth,
node count, integer size, ``Float`` precision and magnitude), or a power of numbers whose
value would exceed :data:`LIMITS` ``["power_bits"]`` (``Pow(Integer(10),
Integer(10**12))`` would take SymPy minutes to evaluate).
:func:`to_srepr` is the writing side: it refuses an expression that
:func:`from_srepr` would reject, so no cache is written that every later read
would throw away. Both derivation caches (:mod:`derivations.catalog`,
:mod:`derivations.task_catalog`) and the generated expressions of
:mod:`derivations.output.numeric_codegen` use this one format.

>>> import sympy as sp
>>> from derivations.symbolic.srepr_reader import from_srepr
>>> x = sp.Symbol("x", positive=True)
>>> from_srepr(sp.srepr(sp.exp(-x) / 2)) == sp.exp(-x) / 2
True
>>> from_srepr("__import__('os').system('echo pwned')")
Traceback (most recent call last):
...
derivations.symbolic.srepr_reader.UnsafeExpression: call of Attribute not allowed
>>> from_srepr("Symbol(__import__('os'))")
Traceback (most recent call last):
...
derivations.symbolic.srepr_reader.UnsafeExpression: call of a non-whitelisted name: '__import__'
>>> from_srepr("Pow(Integer(10), Integer(1000000000000))")
Traceback (most recent call last):
...
derivations.symbolic.srepr_reader.UnsafeExpression: power of numbers too large: (10)**(1000000000000)
"""
from __future__ import annotations

import ast
import keyword
import re

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from .special_functions import wright_omega

__all__ = ["from_srepr", "to_srepr", "UnsafeExpression", "power_bits", "ALLOWED_CALLS", "ALLOWED_NAMES", "LIMITS",
           "TAKE_TEXT"]

#: Bounds on what :func:`from_srepr` reads: characters of text, nesting depth of
#: the syntax tree, its nodes, bits of an integer literal, ``Float`` precision
#: (bits), bits of a power whose base and exponent are both rational numbers (the base raised
#: to the exponent's numerator or denominator, which SymPy computes before it takes a root), and
#: the binary exponent of every ``Float``, written or computed (SymPy evaluates a function of a
#: ``Float`` at once: ``exp`` of ``1e5000`` runs for minutes, and so does reading the text
#: ``'1e-1000000'``). The largest entry of the shipped caches uses a quarter of the length and
#: node count, far less of the rest, and no ``Float``.
LIMITS = {"chars": 200_000, "depth": 200, "nodes": 50_000, "int_bits": 1024, "precision": 10_000,
          "power_bits": 100_000, "float_exponent": 1024}
#: The text of a ``Float`` (as ``srepr`` writes it): a decimal number, its exponent read apart.
_FLOAT_TEXT = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE]([-+]?\d{1,9}))?\s*")

#: Constructors that may appear in a cached expression.
ALLOWED_CALLS = {name: getattr(sp, name) for name in (
    "Symbol", "Integer", "Rational", "Float", "Add", "Mul", "Pow", "exp", "log", "Ei",
    "LambertW", "Abs", "sign", "Equality", "Tuple", "Derivative", "Limit", "Integral",
    "MatrixSymbol", "MatMul", "MatAdd", "Transpose", "ZeroMatrix", "Function")}
ALLOWED_CALLS["Str"] = sp.core.symbol.Str
ALLOWED_CALLS["expm1"] = expm1
ALLOWED_CALLS["log1p"] = log1p
ALLOWED_CALLS["wright_omega"] = wright_omega
#: Bare names (SymPy singletons) that may appear.
ALLOWED_NAMES = {"oo": sp.oo, "zoo": sp.zoo, "nan": sp.nan, "pi": sp.pi, "E": sp.E, "I": sp.I,
                 "true": sp.true, "false": sp.false}
#: Keyword arguments accepted with a bool value (SymPy assumptions).
ASSUMPTIONS = frozenset({
    "real", "positive", "negative", "nonnegative", "nonpositive", "integer", "finite",
    "nonzero", "zero", "rational", "complex", "commutative", "extended_real", "even", "odd"})


class UnsafeExpression(ValueError):
    """The text is not an srepr tree made of whitelisted constructors."""


def _check_size(tree) -> None:
    """Raise :class:`UnsafeExpression` when ``tree`` is deeper or larger than :data:`LIMITS`."""
    nodes, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > LIMITS["depth"]:
            raise UnsafeExpression(f"expression nested deeper than {LIMITS['depth']}")
        if nodes > LIMITS["nodes"]:
            raise UnsafeExpression(f"expression of more than {LIMITS['nodes']} nodes")
        if isinstance(node, ast.Constant) and type(node.value) is int \
                and abs(node.value).bit_length() > LIMITS["int_bits"]:
            raise UnsafeExpression(f"integer of more than {LIMITS['int_bits']} bits")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


#: The constructors that may take text: a name (``Symbol``, ``Str``, ``Function``, ``MatrixSymbol``) or a
#: ``Float``'s decimal digits. Any other reads a text argument with ``sympify``, which evaluates it as Python
#: (``Tuple("__import__('os').getpid()")`` ran the call).
TAKE_TEXT = frozenset({sp.Symbol, sp.core.symbol.Str, sp.Function, sp.MatrixSymbol, sp.Float})


def _checked_call(target, args, kwargs):
    """``target(*args, **kwargs)`` after the bounds that SymPy's evaluation needs, and with text only
    where :data:`TAKE_TEXT` allows it."""
    if target not in TAKE_TEXT and any(isinstance(a, str) for a in args):
        raise UnsafeExpression(f"text argument of {getattr(target, '__name__', target)} not allowed "
                               "(it would be evaluated)")
    if target is sp.Pow and len(args) == 2 and all(isinstance(a, sp.Rational) for a in args):
        base, exponent = args
        if max(abs(base.p).bit_length(), base.q.bit_length()) > 1 and power_bits(base, exponent) > LIMITS["power_bits"]:
            shown = [str(x) if len(str(x)) <= 30 else "<a large number>" for x in (base, exponent)]
            raise UnsafeExpression(f"power of numbers too large: ({shown[0]})**({shown[1]})")
    if target is sp.Float:
        _check_float_text(args)
    if kwargs.get("precision", 0) > LIMITS["precision"]:
        raise UnsafeExpression(f"Float precision above {LIMITS['precision']}")
    out = target(*args, **kwargs)
    if isinstance(out, sp.Float) and out._mpf_[1] and abs(out._mpf_[2] + out._mpf_[3]) > LIMITS["float_exponent"]:
        raise UnsafeExpression(f"a Float beyond 2**(+-{LIMITS['float_exponent']}) in magnitude")
    return out


def power_bits(base, exponent) -> int:
    """The bits SymPy computes for a power of rational numbers ``base**exponent``: it raises the base to
    the exponent's numerator, or nearly its denominator, before it takes the root, so the cost is that
    exponent's larger part times the bits of the base's larger part.

    Parameters
    ----------
    base, exponent : sympy.Rational

    Returns
    -------
    int

    >>> power_bits(sp.Integer(99999), sp.Rational(99999, 122743))
    2086631
    """
    return max(abs(exponent.p), exponent.q) * max(abs(base.p).bit_length(), base.q.bit_length())


def _check_float_text(args) -> None:
    """A ``Float`` written as ``srepr`` writes it: one decimal text (its precision a keyword), whose
    decimal exponent is within :data:`LIMITS` ``["float_exponent"]`` bits."""
    match = _FLOAT_TEXT.fullmatch(args[0]) if len(args) == 1 and isinstance(args[0], str) else None
    if match is None:
        raise UnsafeExpression("Float takes one decimal text (and precision=<bits>)")
    if abs(int(match.group(1) or 0)) > LIMITS["float_exponent"] * 0.302:      # log10(2)
        raise UnsafeExpression(f"a Float beyond 2**(+-{LIMITS['float_exponent']}) in magnitude")


def _is_function_name(name) -> bool:
    """Whether ``name`` may name an undefined function: an identifier that is not a keyword and does
    not begin with an underscore (a code printer writes a function's name as it is)."""
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name) \
        and not name.startswith("_")


def _build(node):
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, str)) and not isinstance(node.value, bool):
            return node.value
        raise UnsafeExpression(f"constant of type {type(node.value).__name__} not allowed")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    if isinstance(node, ast.Name):
        if node.id in ALLOWED_NAMES:
            return ALLOWED_NAMES[node.id]
        raise UnsafeExpression(f"name not allowed: {node.id!r}")
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            if func.id not in ALLOWED_CALLS:
                raise UnsafeExpression(f"call of a non-whitelisted name: {func.id!r}")
            target = ALLOWED_CALLS[func.id]
            if func.id == "Function" and (len(node.args) != 1 or node.keywords
                                          or not isinstance(node.args[0], ast.Constant)
                                          or not _is_function_name(node.args[0].value)):
                raise UnsafeExpression("Function takes one name, a Python identifier")
        elif isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "Function":
            target = _build(func)           # Function('F')(args): an undefined function applied
        else:
            raise UnsafeExpression(f"call of {type(func).__name__} not allowed")
        args = [_build(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            value = kw.value
            if kw.arg in ASSUMPTIONS and isinstance(value, ast.Constant) and isinstance(value.value, bool):
                kwargs[kw.arg] = value.value
            elif kw.arg == "precision" and isinstance(value, ast.Constant) and type(value.value) is int:
                kwargs[kw.arg] = value.value
            else:
                raise UnsafeExpression(f"keyword argument not allowed: {kw.arg!r}")
        return _checked_call(target, args, kwargs)
    raise UnsafeExpression(f"syntax not allowed: {type(node).__name__}")


def from_srepr(text: str):
    """The SymPy object whose ``srepr`` is ``text``, rebuilt without ``eval``.

    Parameters
    ----------
    text : str
        ``sympy.srepr`` output.

    Returns
    -------
    sympy.Basic

    Raises
    ------
    UnsafeExpression
        ``text`` is not valid Python, uses anything outside the whitelist, or
        exceeds :data:`LIMITS`.
    """
    if not isinstance(text, str):
        raise UnsafeExpression(f"expected srepr text, got {type(text).__name__}")
    if len(text) > LIMITS["chars"]:
        raise UnsafeExpression(f"text longer than {LIMITS['chars']} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UnsafeExpression(f"not an expression: {exc}") from None
    _check_size(tree)
    try:
        return _build(tree.body)
    except UnsafeExpression:
        raise
    except RecursionError:
        raise UnsafeExpression("expression nested too deeply") from None
    except (TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        raise UnsafeExpression(f"constructor failed: {exc}") from None


def to_srepr(expr) -> str:
    """``sympy.srepr(expr)``, checked to read back with :func:`from_srepr`.

    Parameters
    ----------
    expr : sympy.Basic

    Returns
    -------
    str

    Raises
    ------
    UnsafeExpression
        ``expr`` holds a node outside the whitelist (it could not be stored).

    Examples
    --------
    >>> import sympy as sp
    >>> to_srepr(sp.Symbol("x", real=True) + 1)
    "Add(Symbol('x', real=True), Integer(1))"
    >>> to_srepr(sp.sin(sp.Symbol("x")))
    Traceback (most recent call last):
    ...
    derivations.symbolic.srepr_reader.UnsafeExpression: cannot store sin(x): call of a non-whitelisted name: 'sin'
    """
    text = sp.srepr(expr)
    try:
        from_srepr(text)
    except UnsafeExpression as exc:
        raise UnsafeExpression(f"cannot store {expr}: {exc}") from None
    return text
