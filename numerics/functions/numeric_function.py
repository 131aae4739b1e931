r"""A numeric function with named arguments, and the two ways to get one.

* :func:`generated_function`: a function of the code *generated ahead of time* from the
  derivation catalog (``numerics._generated``, written by
  ``python -m derivations.catalog --rebuild`` through
  :mod:`derivations.output.numeric_codegen`); nothing is derived or lambdified at run time
  and this path does not import SymPy. The named builders of the theory's functions are in
  :mod:`numerics.functions.lambdified`.
* :func:`numeric`: ``sympy.lambdify`` at run time, for ad-hoc expressions that have no
  generated code (imports SymPy when called).

Backends (:data:`BACKENDS`):

``"numpy"``
    vectorized over broadcastable array arguments (float64);
    ``wright_omega`` -> :func:`numerics.functions.special_functions.wright_omega`,
    ``Ei -> scipy.special.expi`` (imported on first use).
``"math"``
    scalar floats via :mod:`math` (fast in plain Python loops; only for
    functions without special functions).
``"mpmath"``
    scalar, at the current ``mpmath.mp.dps``;
    ``wright_omega(z) -> lambertw(exp(z))`` (exact for any real z in mpmath).

A :class:`NumericFunction` accepts its arguments positionally (in ``.names`` order) or by
name; ``.func`` is the raw positional function for hot loops::

    >>> from numerics.functions.numeric_function import generated_function
    >>> f = generated_function("alpha")
    >>> f.names
    ('mu_QK', 'm', 'n')
    >>> float(f.func(0.0, 5, 50)) == float(f(0.0, m=5, n=50))
    True
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from derivations.core.vocabulary import BACKENDS

from .. import _generated
from . import special_functions

__all__ = ["NumericFunction", "generated_function", "lambdify_modules", "numeric"]

_EXPRESSIONS = Path(__file__).resolve().parent.parent / "_generated_expressions.json"


def _check_backend(backend):
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")
    return backend


@lru_cache(maxsize=1)
def _expressions():
    data = json.loads(_EXPRESSIONS.read_text())
    if data.get("key") != _generated.CATALOG_KEY:  # pragma: no cover - rebuild writes both
        raise RuntimeError("numerics/_generated_expressions.json does not match numerics/_generated.py; "
                           "run python -m derivations.catalog --rebuild")
    return data["functions"]


class NumericFunction:
    """A numeric function with named arguments.

    Parameters
    ----------
    func : callable
        The raw function, taking the arguments positionally in the order of ``names``.
    names : iterable of str
        The argument names.
    backend : {"numpy", "mpmath", "math"}
        What ``func`` computes with (``"mpmath"``: arguments are converted to ``mpmath.mpf``).
    keys : tuple of str, optional
        Names of the outputs, if ``func`` returns several: ``__call__`` then returns a ``dict``.
    name : str, optional
        Registry name in ``numerics._generated.FUNCTIONS``, where ``args`` and ``expr``
        are read on first access when not given.
    args : tuple of sympy.Symbol, optional
        The argument symbols.
    expr : sympy.Expr or tuple, optional
        The expression(s) ``func`` computes.

    Attributes
    ----------
    names : tuple[str]
        Positional argument names.
    backend : {"numpy", "mpmath", "math"}
    func : callable
        The raw function (positional arguments only; fastest).
    keys : tuple[str] or None
        If set, ``__call__`` returns a ``dict`` with these keys.
    name : str or None
        Registry name in ``numerics._generated.FUNCTIONS`` (None for
        :func:`numeric`).
    args : tuple[sympy.Symbol]
        The argument symbols (imports SymPy on first access).
    expr : sympy.Expr or tuple
        The expression(s) the function computes (imports SymPy on first access).
    """

    def __init__(self, func, names, backend, keys=None, name=None, args=None, expr=None):
        self.func, self.names, self.backend, self.keys, self.name = func, tuple(names), backend, keys, name
        self._args, self._expr = args, expr

    def _load(self):
        from derivations.symbolic.srepr_reader import from_srepr
        entry = _expressions()[self.name]
        self._args = tuple(from_srepr(a) for a in entry["args"])
        exprs = tuple(from_srepr(e) for e in entry["exprs"])
        self._expr = exprs[0] if entry["single"] else exprs

    @property
    def args(self):
        if self._args is None:
            self._load()
        return self._args

    @property
    def expr(self):
        if self._expr is None:
            self._load()
        return self._expr

    def __call__(self, *pos, **kw):
        if len(pos) > len(self.names):
            raise TypeError(f"expected at most {len(self.names)} positional arguments")
        values = list(pos)
        for name in self.names[len(pos):]:
            if name not in kw:
                raise TypeError(f"missing argument {name!r} (arguments: {self.names})")
            values.append(kw.pop(name))
        if kw:
            raise TypeError(f"unexpected arguments {sorted(kw)} (arguments: {self.names})")
        if self.backend == "mpmath":
            import mpmath
            values = [v if isinstance(v, (mpmath.mpf, mpmath.mpc)) else mpmath.mpf(v) for v in values]
        out = self.func(*values)
        if self.keys is not None:
            return dict(zip(self.keys, out))
        return out

    def __repr__(self):
        return f"NumericFunction({self.names}, backend={self.backend!r})"


def generated_function(name: str, backend: str = "numpy") -> NumericFunction:
    """The generated function registered as ``name`` for ``backend``.

    Parameters
    ----------
    name : str
        A key of ``numerics._generated.FUNCTIONS``.
    backend : {"numpy", "mpmath", "math"}, optional
        Default ``"numpy"``.

    Returns
    -------
    NumericFunction

    Raises
    ------
    ValueError
        Unknown backend, unknown name, or no code for this backend (the
        ``math`` backend has no special functions).
    """
    _check_backend(backend)
    if not isinstance(name, str) or name not in _generated.FUNCTIONS:
        raise ValueError(f"no generated function {name!r} (name must be a key of "
                         "numerics._generated.FUNCTIONS)")
    return _generated_function(name, backend)


@lru_cache(maxsize=None)
def _generated_function(name, backend):
    """:func:`generated_function` of a checked name and backend, cached."""
    names, keys, funcs = _generated.FUNCTIONS[name]
    if backend not in funcs:
        raise ValueError(f"{name} is not available for the {backend!r} backend "
                         f"(available: {', '.join(funcs)})")
    return NumericFunction(funcs[backend], names, backend, keys, name)


def lambdify_modules(backend="numpy"):
    """The ``modules`` argument of ``sympy.lambdify`` for a backend: the stable
    special functions (Wright omega, Ei, expm1, log1p) mapped to their NumPy/SciPy,
    mpmath or :mod:`math` implementations.

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, optional
        Default ``"numpy"``.

    Returns
    -------
    list
        ``[{name: implementation}, module name]``.

    Raises
    ------
    ValueError
        An unknown backend.
    """
    _check_backend(backend)
    if backend == "numpy":
        import numpy as np
        import scipy.special
        return [{"wright_omega": scipy.special.wrightomega, "Ei": scipy.special.expi,
                 "expm1": np.expm1, "log1p": np.log1p, "logaddexp": np.logaddexp}, "numpy"]
    if backend == "mpmath":
        import mpmath
        return [{"wright_omega": special_functions.wright_omega_mpmath, "Ei": mpmath.ei,
                 "expm1": mpmath.expm1, "log1p": mpmath.log1p}, "mpmath"]
    import math
    return [{"expm1": math.expm1, "log1p": math.log1p, "logaddexp": special_functions.logaddexp_math}, "math"]


def numeric(expr, args, backend="numpy", *, stable=True, cse=False, shares=False):
    """Lambdify an expression at run time (imports SymPy): for ad-hoc
    expressions only; the theory's functions are generated
    (:mod:`numerics.functions.lambdified`).

    Parameters
    ----------
    expr : sympy.Expr, tuple of Expr, or dict[str, Expr]
    args : sequence of sympy.Symbol
        Positional arguments; every free symbol of ``expr`` must be among them.
    backend : {"numpy", "mpmath", "math"}
    stable : bool
        Apply the float rewrites of :func:`derivations.output.float_rewrites.float_form` first.
    cse : bool
        Compute common subexpressions once (``sympy.lambdify(cse=True)``): much
        faster to build and to call for large tuples of expressions.
    shares : bool
        Divide shares of exponential sums through by their term
        (:func:`derivations.output.float_rewrites.as_shares`; the attention and the loss).

    Returns
    -------
    NumericFunction

    Raises
    ------
    ValueError
        Unknown backend, a free symbol of ``expr`` missing from ``args``, or an undefined
        function (``sympy.Function('F')``) in ``expr``: SymPy's lambdify writes the name of
        every symbol that is not an argument, and of every function, into the code it runs.
    """
    import sympy as sp
    from sympy.core.function import AppliedUndef

    from derivations.output.float_rewrites import float_form
    _check_backend(backend)
    keys = None
    if isinstance(expr, dict):
        keys, expr = tuple(expr), tuple(expr.values())
    exprs = expr if isinstance(expr, (tuple, list)) else (expr,)
    exprs = tuple(sp.sympify(e, strict=True) for e in exprs)      # text is not read as code
    missing = set().union(*(e.free_symbols for e in exprs)) - set(args)
    if missing:
        raise ValueError(f"args lack the free symbols {sorted(map(str, missing))}")
    undefined = set().union(*(e.atoms(AppliedUndef) for e in exprs))
    if undefined:      # lambdify would print the function's name as code
        name = min(type(f).__name__ for f in undefined)
        raise ValueError(f"expr holds undefined functions, which have no numeric value: "
                         f"{name[:40]!r}{'...' if len(name) > 40 else ''}")
    if stable or shares:
        exprs = tuple(float_form(e, backend, stable=stable, shares=shares) for e in exprs)
    out = tuple(exprs) if isinstance(expr, (tuple, list)) else exprs[0]
    modules = lambdify_modules(backend)
    func = sp.lambdify(tuple(args), out, modules=modules, cse=cse)
    return NumericFunction(func, tuple(str(a) for a in args), backend, keys, None, tuple(args), out)
