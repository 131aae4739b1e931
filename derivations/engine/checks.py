"""Input checks of the task description: parameter values and the fields of a task.

Every check raises ``ValueError`` naming the parameter or field, the valid
range and the value given, before anything is derived or computed.

* :func:`validate_parameter`: a value of ``m``, ``n``, ``b`` (finite, > 0) or
  of an integer parameter ``M`` (``>= 2``), ``n_c`` (``>= 1``), both exact
  integers at most ``2**53``;
* :func:`parameter_names`: the parameters a task uses; :func:`check_parameter_names`: the names of the
  parameters given, each one the task uses;
* :func:`check_expression`: a count, number of types or scale of a task (a
  SymPy expression in the task's known symbols, finite, and nonnegative,
  positive or a positive integer for *every* value of the parameters).

>>> validate_parameter("n_c", "3")
3
>>> validate_parameter("M", 1e300)
Traceback (most recent call last):
...
ValueError: M must be an integer >= 2 and <= 2**53 = 9007199254740992; got 1e+300
>>> validate_parameter("b", "-1")
Traceback (most recent call last):
...
ValueError: b must be a finite number > 0; got '-1'
"""
from __future__ import annotations

import math
import sympy as sp

from ..core.vocabulary import is_number_text
from .expressions import check_bounds, parse_expression

__all__ = ["MAX_INTEGER", "INTEGER_PARAMETERS", "validate_parameter", "parameter_names", "check_parameter_names",
           "check_expression"]

#: Names of the engine's own symbols, and prefixes of its symbol families: no task parameter takes them.
_ENGINE_NAMES, _ENGINE_PREFIXES = frozenset({"alpha", "t", "epsilon", "y", "K"}), ("eta_", "mu_", "G_", "C_", "x_")
#: The keyword arguments of the numeric functions that take a task's parameter values as keywords beside their own
#: (``numerics.dynamics.state_at_loss``, ``master_lambda``, ``master_shares``, ``crossover_lambda``, ``boundary``,
#: ``task_shape``, ``task_parameters``, ``ReducedSystem``): a parameter of such a name would be taken for the
#: argument.
_KEYWORD_NAMES = frozenset({"task", "task_name", "loss", "ratio", "parameterization", "method", "rtol", "atol", "lam",
                            "lambda_range", "xtol", "target_loss", "ratio_range", "eps", "mu0", "flow"})


def _check_parameter_name(task: str, p):
    """ValueError unless ``p`` may name a parameter of ``task``: an identifier of at most 64 characters other than
    m, n, b, M, the engine's names, the numeric functions' own keywords (:data:`_KEYWORD_NAMES`) and a function or
    constant of SymPy, math or Python (it would shadow it)."""
    import builtins
    import keyword
    if not isinstance(p, str) or not p.isidentifier() or p in ("m", "n", "b", "M") or p in _ENGINE_NAMES \
            or p in _KEYWORD_NAMES or p.startswith(_ENGINE_PREFIXES) or len(p) > 64 or hasattr(sp, p) \
            or hasattr(math, p) or hasattr(builtins, p) or keyword.iskeyword(p):
        raise ValueError(f"task {task!r}: parameters: {p!r} is taken (a parameter is an identifier of "
                         "at most 64 characters other than m, n, b, M, the engine's alpha, t, eta_*, mu_*, "
                         "G_*, C_*, x_*, the numeric functions' task, loss, ratio, method, ... and a function or "
                         "constant of SymPy, math or Python)"[:400])

#: Largest value of an integer parameter: beyond it doubles do not hold every integer.
MAX_INTEGER = 2 ** 53
#: The integer parameters and their smallest value.
INTEGER_PARAMETERS = {"M": 2, "n_c": 1}


def _exact_integer(value):
    """``int`` of an integer-valued number or text; None when it is none (a float above
    2**53 is refused by its range later: such floats are not exact)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, sp.Integer)):
        return int(value)
    if isinstance(value, str):
        if not is_number_text(value):
            return None
        try:
            return int(value.strip())
        except ValueError:
            pass
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(v) or v != math.floor(v):
        return None
    return int(v) if abs(v) <= MAX_INTEGER else math.inf


def validate_parameter(name: str, value, integer=None):
    """Validate a parameter value; returns it as a SymPy number.

    ``m``, ``n``, ``b`` (and any other real parameter): finite and > 0.
    ``M`` (>= 2) and ``n_c`` (>= 1), or any ``name`` with ``integer=True``
    (>= 1): exact integers at most ``2**53`` (integer-valued floats and texts accepted).
    Text is a number written plainly (:func:`derivations.core.vocabulary.is_number_text`: not ``1_0``).

    Parameters
    ----------
    name : str
        The parameter's name.
    value : int, float, str or sympy.Expr
        The value given.
    integer : bool, optional
        Whether the parameter is an integer one (default: ``name`` in :data:`INTEGER_PARAMETERS`).

    Returns
    -------
    sympy.Integer or sympy.Float

    Raises
    ------
    ValueError
        Naming the parameter, its valid range and the value given.
    """
    if integer is None:
        integer = name in INTEGER_PARAMETERS
    if integer:
        lo = INTEGER_PARAMETERS.get(name, 1)
        v = _exact_integer(value)
        if v is None or not lo <= v <= MAX_INTEGER:
            raise ValueError(f"{name} must be an integer >= {lo} and <= 2**53 = {MAX_INTEGER}; got {value!r}")
        return sp.Integer(v)
    message = f"{name} must be a finite number > 0; got {value!r}"
    if isinstance(value, bool) or (isinstance(value, str) and not is_number_text(value)):
        raise ValueError(message)
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(message) from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(message)
    return sp.Integer(int(v)) if v == int(v) else sp.Float(v)


def parameter_names(task) -> tuple:
    """The parameters ``task`` uses, sorted: the symbols its counts, scales and class number depend on
    (:meth:`~derivations.engine.Task.free_symbols`: ``m, n, b, M`` and its own, e.g. ``n_c``; ``()`` for a
    task of fixed numbers, the authors').

    Parameters
    ----------
    task : derivations.engine.Task

    Returns
    -------
    tuple of str
    """
    return tuple(sorted(str(s) for s in task.free_symbols()))


def check_parameter_names(task, names) -> None:
    """ValueError unless ``task`` uses every parameter of ``names``: a parameter a task takes a value of is
    one its counts, scales or class number depend on (:func:`parameter_names`), so that
    a value given for one it does not use (``n`` of a task without irrelevant tokens, ``M`` of a task whose
    number of classes is fixed, as the authors' 4) is refused, not ignored.

    Parameters
    ----------
    task : derivations.engine.Task
    names : iterable of str
        The parameters given.

    Raises
    ------
    ValueError
        ``task 'x' has no parameter 'q' (its parameters: M, b, m, n)``, for the first name not taken.
    """
    used = sorted(parameter_names(task))
    for name in names:
        if name not in used:
            fixed = task.classes.is_Integer and name == "M"
            fixed = f"; its number of classes is fixed, M = {task.classes}" if fixed else ""
            raise ValueError(f"task {task.name!r} has no parameter {name!r} (its parameters: "
                             f"{', '.join(used) if used else 'none'}{fixed})")


_RULES = {"nonnegative": ("a finite expression >= 0", lambda e: e.is_nonnegative),
          "positive": ("a finite expression > 0", lambda e: e.is_positive),
          "positive integer": ("a positive integer (or a positive-integer parameter such as n_c)",
                               lambda e: e.is_integer and e.is_positive)}


def check_expression(what: str, value, rule: str, known=None, names=None):
    """``value`` (text read by :func:`~derivations.engine.expressions.parse_expression`,
    never by Python; or a number or SymPy expression, within the same bounds) checked against ``rule`` ("nonnegative", "positive" or
    "positive integer") for every value of the parameters, finite, real, and
    (with ``known``, a set of symbols) free only of known symbols. Text is parsed
    with ``names`` (``{name: symbol}``), so that ``"m"`` is the model's positive ``m``.

    Parameters
    ----------
    what : str
        The field, for the message (``"group 'r': multiplicity"``).
    value : str, int, float or sympy.Expr
        The value given.
    rule : str
        ``"nonnegative"``, ``"positive"`` or ``"positive integer"``.
    known : set of sympy.Symbol, optional
        The symbols the expression may use (default: any).
    names : dict, optional
        ``{name: sympy.Symbol}`` for parsing text.

    Returns
    -------
    sympy.Expr

    Raises
    ------
    ValueError
        ``"<what> must be <rule>; got <value>"`` and what is wrong.
    """
    described, holds = _RULES[rule]
    shown = value if not isinstance(value, str) or len(value) <= 60 else value[:40] + "..."
    try:
        if isinstance(value, str):
            expr = parse_expression(value, dict(names or {}), known_only=False)
        else:
            expr = check_bounds(sp.sympify(value, strict=True))
    except (sp.SympifyError, TypeError, AttributeError):
        raise ValueError(f"{what} must be {described}; got {shown!r}, which is not an expression") from None
    except ValueError as exc:
        raise ValueError(f"{what} must be {described}; got {shown!r}, which is not an expression ({exc})") from None
    if not isinstance(expr, sp.Expr):
        raise ValueError(f"{what} must be {described}; got {value!r}")
    if known is not None:
        unknown = sorted(str(s) for s in expr.free_symbols - set(known))
        if unknown:
            raise ValueError(f"{what} uses unknown symbols {', '.join(unknown)} (known: "
                             f"{', '.join(sorted(str(s) for s in known))}: the symbols of derivations.symbolic.symbols "
                             "and the task's declared parameters)")
    if not (expr.is_finite and holds(expr)):
        raise ValueError(f"{what} must be {described} for every value of the parameters; got {expr}")
    return expr

