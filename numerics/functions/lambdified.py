r"""Numeric functions of the derived theory, with named arguments.

Every function here is a thin wrapper over code *generated ahead of time* from
the derivation catalog (:mod:`numerics._generated`, written by
``python -m derivations.catalog --rebuild`` through
:mod:`derivations.output.numeric_codegen`): nothing is derived or lambdified at run
time, and importing this module does not import SymPy. The generator applies
only SymPy operations (derivatives, Jacobians, substitutions, ``solve``) and
mechanical floating-point rewrites (``expm1``, ``log1p``, ``logaddexp``,
the Wright omega identity) to the catalog's expressions.

Backends:

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

A builder returns a :class:`NumericFunction` that accepts its arguments
positionally (in ``.names`` order) or by name::

    >>> from numerics.functions.lambdified import alpha_fn
    >>> f = alpha_fn()
    >>> f.names
    ('mu_QK', 'm', 'n')
    >>> float(f(0.0, m=5, n=50))   # m e^0 / (m e^0 + n) = 5/55
    0.09090909090909091

Argument conventions
--------------------
State variables come first, then the parameters in the fixed order
:data:`PARAM_NAMES` = ``(m, n, b, M, eta_QK, eta_OV, eta_Q, eta_K, eta_O,
eta_V, C_QK, C_OV)`` (unused ones are accepted and ignored), so that hot
loops can call ``.func`` positionally. ``.args`` (SymPy symbols) and
``.expr`` (the generated expressions) are read back on demand, importing
SymPy only then.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from derivations.core.vocabulary import check_circuit, check_parameterization

from .. import _generated
from . import special_functions

#: The public names. The SymPy-side names (``PARAMS``, ``eps``, ``stabilize``,
#: ``as_log1p``, ``omega_identity`` and the symbols such as ``mu_QK``) are
#: resolved on first access by the module ``__getattr__`` and kept out of
#: ``__all__``, so that ``from numerics.functions.lambdified import *`` does not
#: import SymPy.
__all__ = [
    "PARAM_NAMES", "BACKENDS", "NumericFunction", "numeric", "lambdify_modules",
    "alpha_fn", "loss_fn", "loss_of_margin_fn", "reduced_rhs", "reduced_jacobian",
    "first_integral_fn", "first_integral_scale_fn", "line_coordinates_fn", "orbit_fn",
    "orbit_residual_fn", "initial_point_fn", "initial_conserved_fn", "circuit_magnitudes_fn",
    "margin_at_loss_fn", "state_equation_fn", "state_equation_dp_fn", "state_equation_mu_fn",
    "state_bounds_fn", "odds_of_mu_QK_fn", "state_from_mu_QK_fn", "state_from_odds_fn",
    "time_integrand_fn", "generated_function",
]

BACKENDS = ("numpy", "mpmath", "math")
#: Names of the parameters every flow function takes after its state variables.
PARAM_NAMES = ("m", "n", "b", "M", "eta_QK", "eta_OV", "eta_Q", "eta_K", "eta_O", "eta_V",
               "C_QK", "C_OV")
_EXPRESSIONS = Path(__file__).resolve().parent.parent / "_generated_expressions.json"
#: SymPy-side names, resolved on first access (module ``__getattr__``).
_SYMPY_NAMES = {
    "PARAMS": ("derivations.output.numeric_codegen", "PARAMS"),
    "eps": ("derivations.output.numeric_codegen", "eps"),
    "x_logp": ("derivations.output.numeric_codegen", "x_logp"),
    "c_sym": ("derivations.output.numeric_codegen", "c_sym"),
    "stabilize": ("derivations.output.numeric_codegen", "stabilize"),
    "as_log1p": ("derivations.output.numeric_codegen", "as_log1p"),
    "omega_identity": ("derivations.output.numeric_codegen", "omega_identity"),
}


def __getattr__(name):
    """SymPy objects (``PARAMS``, ``eps``, symbols such as ``mu_QK``, the
    rewrite helpers), imported only when asked for."""
    import importlib
    if name in _SYMPY_NAMES:
        module, attr = _SYMPY_NAMES[name]
        return getattr(importlib.import_module(module), attr)
    if not name.startswith("_"):
        from derivations.symbolic.symbols import SYMBOLS
        if name in SYMBOLS:
            return SYMBOLS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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

    Attributes
    ----------
    names : tuple[str]
        Positional argument names.
    backend : {"numpy", "mpmath", "math"}
    func : callable
        The raw function (positional arguments only; fastest).
    keys : tuple[str] or None
        If set, :meth:`__call__` returns a ``dict`` with these keys.
    name : str or None
        Registry name in :data:`numerics._generated.FUNCTIONS` (None for
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


@lru_cache(maxsize=None)
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
    try:
        names, keys, funcs = _generated.FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"no generated function {name!r}") from None
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
                 "expm1": np.expm1, "log1p": np.log1p}, "numpy"]
    if backend == "mpmath":
        import mpmath
        return [{"wright_omega": special_functions.wright_omega_mpmath, "Ei": mpmath.ei,
                 "expm1": mpmath.expm1, "log1p": mpmath.log1p}, "mpmath"]
    import math
    return [{"expm1": math.expm1, "log1p": math.log1p}, "math"]


def numeric(expr, args, backend="numpy", *, stable=True, cse=False):
    """Lambdify an expression at run time (imports SymPy): for ad-hoc
    expressions only; the theory's functions are generated (see the builders).

    Parameters
    ----------
    expr : sympy.Expr, tuple of Expr, or dict[str, Expr]
    args : sequence of sympy.Symbol
        Positional arguments; every free symbol of ``expr`` must be among them.
    backend : {"numpy", "mpmath", "math"}
    stable : bool
        Apply :func:`derivations.output.numeric_codegen.stabilize` first.
    cse : bool
        Compute common subexpressions once (``sympy.lambdify(cse=True)``): much
        faster to build and to call for large tuples of expressions.

    Returns
    -------
    NumericFunction

    Raises
    ------
    ValueError
        Unknown backend, or a free symbol of ``expr`` missing from ``args``.
    """
    import sympy as sp

    from derivations.output.numeric_codegen import stabilize as _stabilize
    _check_backend(backend)
    keys = None
    if isinstance(expr, dict):
        keys, expr = tuple(expr), tuple(expr.values())
    exprs = expr if isinstance(expr, (tuple, list)) else (expr,)
    missing = set().union(*(sp.sympify(e).free_symbols for e in exprs)) - set(args)
    if missing:
        raise ValueError(f"args lack the free symbols {sorted(map(str, missing))}")
    if stable:
        exprs = tuple(_stabilize(sp.sympify(e)) for e in exprs)
    out = tuple(exprs) if isinstance(expr, (tuple, list)) else exprs[0]
    modules = lambdify_modules(backend)
    func = sp.lambdify(tuple(args), out, modules=modules, cse=cse)
    return NumericFunction(func, tuple(str(a) for a in args), backend, keys, None, tuple(args), out)


# --------------------------------------------------------------------------
# Model quantities
# --------------------------------------------------------------------------

def alpha_fn(backend="numpy"):
    r"""alpha(mu_QK; m, n) = m e^{mu_QK} / (m e^{mu_QK} + n) (catalog ``model.alpha``),
    written as ``1/(1 + n e^{-mu_QK}/m)`` so that neither tail overflows.
    Arguments ``(mu_QK, m, n)``."""
    return generated_function("alpha", backend)


def loss_of_margin_fn(backend="numpy"):
    r"""Loss as a function of the margin s = alpha mu_OV,
    :math:`L = \log(1 + (M-1)e^{-s})` (catalog ``model.loss_alpha``), evaluated
    as ``logaddexp(0, log(M-1) - s)`` in floats: accurate at tiny loss and
    finite (about ``log(M-1) - s``) at a large negative margin.
    Arguments ``(s, M)``."""
    return generated_function("loss_of_margin", backend)


def loss_fn(backend="numpy"):
    r"""Loss in (mu_OV, mu_QK): :func:`loss_of_margin_fn` at
    s = alpha(mu_QK) mu_OV. Arguments ``(mu_OV, mu_QK, m, n, M)``.

    >>> round(float(loss_fn()(-1e6, 0.0, m=5, n=50, M=20)), 3)  # no overflow to inf
    90912.035
    """
    return generated_function("loss", backend)


def _flow_tag(parameterization, balanced):
    return f"[{check_parameterization(parameterization)},{'balanced' if balanced else 'unbalanced'}]"


def reduced_rhs(parameterization="CACO", balanced=True, backend="numpy"):
    r"""Right-hand side ``(dmu_OV/dt, dmu_QK/dt)`` of the reduced flow
    (catalog ``<P>.dmu_OV_dt``, ``<P>.dmu_QK_dt``; unbalanced:
    ``<P>.dmu_*_dt_unbalanced_alpha`` with alpha substituted).

    CACO: :math:`\dot\mu_{OV} = \eta_{OV}\alpha/(b(e^{\alpha\mu_{OV}}+M-1))`,
    :math:`\dot\mu_{QK} = \eta_{QK}(M-1)\alpha(1-\alpha)\mu_{OV}/(Mb^2(e^{\alpha\mu_{OV}}+M-1))`;
    factorized circuits replace the rate by the effective rate
    (``balanced=False``: with ``C_QK``/``C_OV``).

    Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``.
    """
    return generated_function("reduced_rhs" + _flow_tag(parameterization, balanced), backend)


def reduced_jacobian(parameterization="CACO", balanced=True, backend="numpy"):
    """Jacobian ``[[d f_OV/d mu_OV, d f_OV/d mu_QK], [d f_QK/d mu_OV, d f_QK/d mu_QK]]``
    of :func:`reduced_rhs` (``sympy.Matrix.jacobian`` at generation time),
    flattened row-major into a 4-tuple. Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``."""
    return generated_function("reduced_jacobian" + _flow_tag(parameterization, balanced), backend)


def first_integral_fn(parameterization="CACO", backend="numpy"):
    r"""First integral H(mu_OV, mu_QK) of the balanced reduced flow (catalog
    ``<P>.first_integral``; CACO:
    :math:`m e^{\mu_{QK}} + n\mu_{QK} - n\frac{\eta_{QK}}{\eta_{OV}}\frac{(M-1)\mu_{OV}^2}{2Mb}`).
    Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``."""
    return generated_function(f"first_integral[{check_parameterization(parameterization)}]", backend)


def first_integral_scale_fn(parameterization="CACO", backend="numpy"):
    """Sum of the absolute values of the terms of :func:`first_integral_fn`:
    the scale of the cancellation in H (a drift of H is relative to it).
    Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``."""
    return generated_function(f"first_integral_scale[{check_parameterization(parameterization)}]", backend)


def line_coordinates_fn(parameterization="CACO", backend="numpy"):
    """``{"X", "Y", "slope"}``: the line coordinates of the orbit (catalog
    ``<P>.line_X``, ``line_Y``, ``line_slope``); along every trajectory
    ``Y - Y_0 = slope (X - X_0)``. Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``."""
    return generated_function(f"line_coordinates[{check_parameterization(parameterization)}]", backend)


def orbit_fn(parameterization="CACO", backend="numpy"):
    r"""Explicit orbit mu_QK(mu_OV) through (mu_OV_0, mu_QK_0) (CACO, CAFO;
    catalog ``<P>.orbit``): :math:`\mu_{QK} = K - \omega(K + \log(m/n))`,
    generated after the Wright omega identity as
    :math:`\log\omega(K+\log(m/n)) - \log(m/n)`.
    Arguments ``(mu_OV, mu_OV_0, mu_QK_0, *PARAM_NAMES)``.

    Raises
    ------
    ValueError
        For FACO/FAFO, whose orbit is implicit (use :func:`orbit_residual_fn`).
    """
    check_parameterization(parameterization)
    if f"orbit[{parameterization}]" not in _generated.FUNCTIONS:
        raise ValueError(f"parameterization {parameterization!r} has an implicit orbit; "
                         "use orbit_residual_fn")
    return generated_function(f"orbit[{parameterization}]", backend)


def orbit_residual_fn(parameterization="CACO", backend="numpy"):
    """``lhs - rhs`` of the orbit equation (0 on the orbit), for all four
    parameterizations (explicit orbits: ``mu_QK - orbit``).
    Arguments ``(mu_OV, mu_QK, mu_OV_0, mu_QK_0, *PARAM_NAMES)``."""
    return generated_function(f"orbit_residual[{check_parameterization(parameterization)}]", backend)


def initial_point_fn(parameterization="CACO", backend="numpy"):
    """``(mu_OV(0), mu_QK(0))`` of the paper's initialization with scale eps
    (:func:`derivations.tasks.paper.factorization.initial_point`; collapsed circuits
    start at 0). Arguments ``(eps, b)``."""
    return generated_function(f"initial_point[{check_parameterization(parameterization)}]", backend)


def initial_conserved_fn(circuit="QK", backend="numpy"):
    """Conserved quantity C of a factorized circuit at the paper's
    initialization (:func:`derivations.tasks.paper.factorization.initial_conserved`,
    ``eps^2 (1/eta_A - 1/eta_B)``). Arguments ``(eps, *PARAM_NAMES)``."""
    return generated_function(f"initial_conserved[{check_circuit(circuit).name}]", backend)


def circuit_magnitudes_fn(backend="numpy"):
    """``{"QK", "OV"}``: each circuit's amplitude on its basis matrix at
    (mu_OV, mu_QK), solved from the family's mu map (``b mu_QK`` and
    ``sqrt(b) mu_OV``; for a factorized circuit, the product of its factor
    coordinates). Arguments ``(mu_OV, mu_QK, b)``."""
    return generated_function("circuit_magnitudes", backend)


# --------------------------------------------------------------------------
# Sharpness at fixed loss (CACO, zero init, eta_OV = 1, r = eta_QK)
# --------------------------------------------------------------------------

def margin_at_loss_fn(backend="numpy"):
    r"""Margin at loss L: :math:`s = \log(M-1) - \log(\mathrm{expm1}(L))`
    (catalog ``sharpness.margin``). Arguments ``(L, M)``."""
    return generated_function("margin_at_loss", backend)


def state_equation_fn(backend="numpy"):
    r"""State equation F(p; s, r) (= 0 at the state; catalog
    ``sharpness.state_equation``). Arguments ``(p, s, r, m, n, b, M)``."""
    return generated_function("state_equation", backend)


def state_equation_dp_fn(backend="numpy"):
    """dF/dp of :func:`state_equation_fn`. Same arguments."""
    return generated_function("state_equation_dp", backend)


def odds_of_mu_QK_fn(backend="numpy"):
    """The attention odds p as a function of mu_QK (``p = m e^{mu_QK}/n``,
    solved from catalog ``sharpness.state.mu_QK``). Arguments ``(mu_QK, m, n)``."""
    return generated_function("odds_of_mu_QK", backend)


def state_equation_mu_fn(backend="numpy"):
    r"""The state equation in u = mu_QK (the Newton variable of
    :func:`numerics.dynamics.closed_form.state_at_loss`) and its u-derivative:
    :math:`G(u) = \frac{m}{n}(e^u - 1) + u - \frac{r s^2 (M-1)}{2Mb}\,(1 + \frac{n}{m}e^{-u})^2`,
    the r-free part written with ``expm1(u)`` so that the root keeps full
    relative accuracy when mu_QK is tiny. G is increasing in u.
    Arguments ``(mu_QK, s, r, m, n, b, M)``; returns ``(G, dG/du)``."""
    return generated_function("state_equation_mu", backend)


def state_bounds_fn(backend="numpy"):
    r"""Four Wright-omega candidates bracketing the root of the state
    equation, in u = mu_QK (from Lambert-type bounding equations of
    :math:`G_0(x) = k(1+e^{-x})^2`, :math:`k = r s^2 (M-1)/(2Mb)`, x = log p;
    see :func:`derivations.output.numeric_codegen._state_bounds`). The caller checks
    the signs. Arguments ``(s, r, m, n, b, M)``."""
    return generated_function("state_bounds", backend)


def state_from_mu_QK_fn(backend="numpy"):
    """``{"alpha", "mu_OV", "p"}`` at the state, from catalog ``sharpness.state.*``
    with p eliminated through :func:`odds_of_mu_QK_fn` (no precision lost in
    ``mu_QK = log(n p/m)``). Arguments ``(mu_QK, s, m, n, b, M)``."""
    return generated_function("state_from_mu_QK", backend)


def state_from_odds_fn(backend="numpy"):
    """``{"alpha", "mu_QK", "mu_OV"}`` from the odds p and the margin s
    (catalog ``sharpness.state.*``). Arguments ``(p, s, m, n, b, M)``."""
    return generated_function("state_from_odds", backend)


def time_integrand_fn(parameterization="CACO", backend="numpy"):
    r"""dt/dmu_OV along the explicit orbit (CACO, CAFO):
    :math:`b(e^{\alpha\mu_{OV}} + M - 1)/(\eta_{OV}\alpha)` with alpha on the
    orbit (1/``<P>.dmu_OV_dt`` on ``<P>.orbit``; for CACO this is catalog
    ``asymptotics.time_integrand``), after the Wright omega identity.
    Arguments ``(mu_OV, mu_OV_0, mu_QK_0, *PARAM_NAMES)``."""
    check_parameterization(parameterization)
    if f"time_integrand[{parameterization}]" not in _generated.FUNCTIONS:
        raise ValueError(f"parameterization {parameterization!r} has an implicit orbit; "
                         "integrate the reduced ODE instead")
    return generated_function(f"time_integrand[{parameterization}]", backend)

