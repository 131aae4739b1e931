r"""Numeric functions lambdified from the SymPy derivations.

Nothing here types a formula of the theory: every function is built by
:func:`numeric` from an expression that :mod:`derivations` returns, optionally
after a purely *mechanical* rewrite for floating point (``exp(x) - 1 ->
expm1(x)``, ``log(1 + x) -> log1p(x)``, see :func:`stabilize`) or a SymPy
operation on it (a derivative, a Jacobian, a substitution ``p = e^x``).

Two backends:

``"numpy"``
    vectorized over broadcastable array arguments (float64);
    ``wright_omega -> scipy.special.wrightomega``, ``Ei -> scipy.special.expi``.
``"math"``
    scalar floats via the :mod:`math` module (fast in plain Python loops;
    no special functions).
``"mpmath"``
    scalar, at the current ``mpmath.mp.dps``;
    ``wright_omega(z) -> lambertw(exp(z))`` (exact for any real z in mpmath),
    ``expm1``/``log1p`` map to mpmath's own.

Every builder is cached (:func:`functools.lru_cache`), so the SymPy work is
done once per process. The returned :class:`NumericFunction` accepts its
arguments positionally (in ``.args`` order) or by symbol name::

    >>> from numerics.lambdified import alpha_fn
    >>> f = alpha_fn()
    >>> f.names
    ('mu_QK', 'm', 'n')
    >>> float(f(0.0, m=5, n=50))   # m e^0 / (m e^0 + n) = 5/55
    0.09090909090909091

Argument conventions
--------------------
State variables come first, then the parameters in the fixed order
:data:`PARAMS` = ``(m, n, b, M, eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V,
C_QK, C_OV)`` (unused ones are accepted and ignored), so that hot loops can
call ``.func`` positionally.
"""
from __future__ import annotations

import math
from functools import lru_cache

import mpmath
import numpy as np
import scipy.special
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p
from sympy.codegen.rewriting import optimize, optims_c99

from derivations.special_functions import wright_omega
from derivations.symbols import (C_OV, C_QK, L, M, b, eta_K, eta_O, eta_OV, eta_Q,
                                 eta_QK, eta_V, m, mu_OV, mu_OV_0, mu_QK, mu_QK_0, n, p,
                                 r, s)

__all__ = [
    "PARAMS", "BACKENDS", "NumericFunction", "numeric", "stabilize", "eps",
    "alpha_fn", "loss_fn", "loss_of_margin_fn", "reduced_rhs", "reduced_jacobian",
    "first_integral_fn", "orbit_fn", "orbit_residual_fn", "initial_point_fn",
    "initial_conserved_fn", "margin_at_loss_fn", "state_equation_fn",
    "state_equation_dp_fn", "state_equation_mu_fn", "state_bounds_fn",
    "state_from_mu_QK_fn", "state_from_odds_fn", "time_integrand_fn", "as_log1p", "omega_identity",
]

BACKENDS = ("numpy", "mpmath", "math")
PARAMS = (m, n, b, M, eta_QK, eta_OV, eta_Q, eta_K, eta_O, eta_V, C_QK, C_OV)
#: Initialization scale of factorized circuits.
eps = sp.Symbol("eps", positive=True)
#: log of the attention odds, x = log p (the Newton variable of the state equation).
x_logp = sp.Symbol("x", real=True)
#: Constant of the state equation, c = r (M-1) s^2 / (2 M b) (see :func:`log_p_bounds_fn`).
c_sym = sp.Symbol("c", positive=True)


def _mp_wright_omega(z):
    return mpmath.lambertw(mpmath.exp(z)).real


_NUMPY_MODULES = [{"wright_omega": scipy.special.wrightomega, "Ei": scipy.special.expi,
                   "expm1": np.expm1, "log1p": np.log1p}, "numpy"]
_MATH_MODULES = [{"expm1": math.expm1, "log1p": math.log1p}, "math"]
_MPMATH_MODULES = [{"wright_omega": _mp_wright_omega, "Ei": mpmath.ei,
                    "expm1": mpmath.expm1, "log1p": mpmath.log1p}, "mpmath"]


def _check_backend(backend):
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")
    return backend


def stabilize(expr):
    r"""Mechanical floating-point rewrites of a derived expression:
    ``exp(x) - 1 -> expm1(x)``, ``log(1 + x) -> log1p(x)`` (SymPy's
    ``optims_c99`` rewriting). The value is unchanged; only rounding improves.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
    """
    return optimize(expr, optims_c99)


def as_log1p(expr):
    r"""Write a logarithm ``log(u)`` as ``log1p(u - 1)`` with ``u - 1``
    simplified (e.g. ``log(e^{-s}(e^s + M - 1)) -> log1p((M-1) e^{-s})``),
    for arguments close to 1. Other expressions are returned unchanged."""
    def repl(arg):
        return log1p(sp.factor(sp.expand(arg - 1)))
    return expr.replace(sp.log, repl)


def omega_identity(expr):
    r"""Rewrite with the defining identity of Wright omega,
    :math:`\omega(z) = z - \log\omega(z)`, applied once to every
    ``wright_omega(z)`` and expanded. The orbit
    :math:`\mu_{QK} = K - \omega(K + \log(m/n))` becomes
    :math:`\log\omega(K + \log(m/n)) - \log(m/n)`: K cancels symbolically
    instead of in floating point (K grows like mu_OV^2)."""
    return sp.expand(expr.xreplace({w: w.args[0] - sp.log(w) for w in expr.atoms(wright_omega)}))


class NumericFunction:
    """A lambdified expression with named arguments.

    Attributes
    ----------
    expr : sympy.Expr or tuple
        The (stabilized) expression(s) that were lambdified.
    args : tuple[sympy.Symbol]
        Positional argument order.
    names : tuple[str]
        ``str`` of each argument.
    backend : {"numpy", "mpmath"}
    func : callable
        The raw lambdified function (positional arguments only; fastest).
    keys : tuple[str] or None
        If set, the result is returned as a ``dict`` with these keys.
    """

    def __init__(self, expr, args, backend, keys=None):
        self.expr, self.args, self.backend, self.keys = expr, tuple(args), backend, keys
        self.names = tuple(str(a) for a in self.args)
        modules = {"numpy": _NUMPY_MODULES, "mpmath": _MPMATH_MODULES,
                   "math": _MATH_MODULES}[backend]
        self.func = sp.lambdify(self.args, expr, modules=modules)

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
            values = [mpmath.mpf(v) if not isinstance(v, (mpmath.mpf, mpmath.mpc)) else v
                      for v in values]
        out = self.func(*values)
        if self.keys is not None:
            return dict(zip(self.keys, out))
        return out

    def __repr__(self):
        return f"NumericFunction({self.names}, backend={self.backend!r})"


def numeric(expr, args, backend="numpy", *, stable=True):
    """Lambdify a derived expression (or a tuple/dict of them).

    Parameters
    ----------
    expr : sympy.Expr, tuple of Expr, or dict[str, Expr]
    args : sequence of sympy.Symbol
        Positional arguments, in order. Every free symbol of ``expr`` must
        be among them.
    backend : {"numpy", "mpmath"}
    stable : bool
        Apply :func:`stabilize` first.

    Returns
    -------
    NumericFunction

    Raises
    ------
    ValueError
        Unknown backend, or a free symbol of ``expr`` missing from ``args``.
    """
    _check_backend(backend)
    keys = None
    if isinstance(expr, dict):
        keys, expr = tuple(expr), tuple(expr.values())
    exprs = expr if isinstance(expr, (tuple, list)) else (expr,)
    missing = set().union(*(sp.sympify(e).free_symbols for e in exprs)) - set(args)
    if missing:
        raise ValueError(f"args lack the free symbols {sorted(map(str, missing))}")
    if stable:
        exprs = tuple(stabilize(sp.sympify(e)) for e in exprs)
    out = tuple(exprs) if isinstance(expr, (tuple, list)) else exprs[0]
    return NumericFunction(out, args, backend, keys)


# --------------------------------------------------------------------------
# Model quantities
# --------------------------------------------------------------------------

@lru_cache(maxsize=None)
def alpha_fn(backend="numpy"):
    r"""alpha(mu_QK; m, n) = m e^{mu_QK} / (m e^{mu_QK} + n), from
    :func:`derivations.reduction.alpha_expr`, written as ``1 / (1/alpha)``
    expanded (``1/(1 + n e^{-mu_QK}/m)``) so that neither tail overflows."""
    from derivations.reduction import alpha_expr
    a = 1 / sp.expand(1 / alpha_expr())
    return numeric(a, (mu_QK, m, n), backend)


@lru_cache(maxsize=None)
def loss_of_margin_fn(backend="numpy"):
    r"""Loss as a function of the margin s = alpha mu_OV,
    :math:`L = \log(e^{s} + M - 1) - s`, from
    :meth:`derivations.model.Family.reduced_loss`, evaluated as
    ``log1p((M-1) e^{-s})`` (the derived expression combined into one log by
    SymPy and passed through :func:`stabilize`), accurate at tiny loss."""
    from derivations.model import family
    from derivations.symbols import alpha
    e = family("CACO").reduced_loss().subs(alpha, s / mu_OV)
    e = as_log1p(sp.log(sp.expand(sp.exp(e))))   # one logarithm: log(e^{-s}(e^s + M - 1))
    return numeric(e, (s, M), backend)


@lru_cache(maxsize=None)
def loss_fn(backend="numpy"):
    r"""Loss in (mu_OV, mu_QK): :func:`loss_of_margin_fn` at
    s = alpha(mu_QK) mu_OV (from :func:`derivations.reduction.reduced_loss`'s
    ingredients). Arguments ``(mu_OV, mu_QK, m, n, M)``."""
    from derivations.model import family
    from derivations.reduction import alpha_expr
    from derivations.symbols import alpha
    e = family("CACO").reduced_loss().subs(alpha, s / mu_OV)
    e = as_log1p(sp.log(sp.expand(sp.exp(e))))
    e = e.subs(s, mu_OV / sp.expand(1 / alpha_expr()))
    return numeric(e, (mu_OV, mu_QK, m, n, M), backend)


@lru_cache(maxsize=None)
def reduced_rhs(parameterization="CACO", balanced=True, backend="numpy"):
    r"""Right-hand side ``(dmu_OV/dt, dmu_QK/dt)`` of the reduced flow, from
    :func:`derivations.reduction.reduced_odes`.

    CACO: :math:`\dot\mu_{OV} = \eta_{OV}\alpha/(b(e^{\alpha\mu_{OV}}+M-1))`,
    :math:`\dot\mu_{QK} = \eta_{QK}(M-1)\alpha(1-\alpha)\mu_{OV}/(Mb^2(e^{\alpha\mu_{OV}}+M-1))`;
    factorized circuits replace the rate by the effective rate
    (``balanced=False``: with ``C_QK``/``C_OV``).

    Arguments ``(mu_OV, mu_QK, *PARAMS)``.
    """
    from derivations.reduction import reduced_odes
    return numeric(tuple(reduced_odes(parameterization, balanced=balanced)),
                   (mu_OV, mu_QK, *PARAMS), backend)


@lru_cache(maxsize=None)
def reduced_jacobian(parameterization="CACO", balanced=True, backend="numpy"):
    """Jacobian ``[[d f_OV/d mu_OV, d f_OV/d mu_QK], [d f_QK/d mu_OV, d f_QK/d mu_QK]]``
    of :func:`reduced_rhs` (``sympy.Matrix.jacobian``), flattened row-major
    into a 4-tuple. Arguments ``(mu_OV, mu_QK, *PARAMS)``."""
    from derivations.reduction import reduced_odes
    F = sp.Matrix(reduced_odes(parameterization, balanced=balanced))
    J = F.jacobian([mu_OV, mu_QK])
    return numeric(tuple(J), (mu_OV, mu_QK, *PARAMS), backend, stable=False)


@lru_cache(maxsize=None)
def first_integral_fn(parameterization="CACO", backend="numpy"):
    r"""First integral H(mu_OV, mu_QK) of the balanced reduced flow, from
    :func:`derivations.first_integral.first_integral` (CACO:
    :math:`m e^{\mu_{QK}} + n\mu_{QK} - n\frac{\eta_{QK}}{\eta_{OV}}\frac{(M-1)\mu_{OV}^2}{2Mb}`).
    Arguments ``(mu_OV, mu_QK, *PARAMS)``."""
    from derivations.first_integral import first_integral
    return numeric(first_integral(parameterization), (mu_OV, mu_QK, *PARAMS), backend,
                   stable=False)


@lru_cache(maxsize=None)
def orbit_fn(parameterization="CACO", backend="numpy"):
    r"""Explicit orbit mu_QK(mu_OV) through (mu_OV_0, mu_QK_0) (CACO, CAFO), from
    :func:`derivations.first_integral.orbit`: :math:`\mu_{QK} = K - \omega(K + \log(m/n))`,
    evaluated after :func:`omega_identity` as :math:`\log\omega(K+\log(m/n)) - \log(m/n)`.
    Arguments ``(mu_OV, mu_OV_0, mu_QK_0, *PARAMS)``.

    Raises
    ------
    ValueError
        For FACO/FAFO, whose orbit is implicit (use :func:`orbit_residual_fn`).
    """
    from derivations.first_integral import orbit
    o = orbit(parameterization)
    if isinstance(o, sp.Equality):
        raise ValueError(f"parameterization {parameterization!r} has an implicit orbit; "
                         "use orbit_residual_fn")
    return numeric(omega_identity(o), (mu_OV, mu_OV_0, mu_QK_0, *PARAMS), backend, stable=False)


@lru_cache(maxsize=None)
def orbit_residual_fn(parameterization="CACO", backend="numpy"):
    """``lhs - rhs`` of the orbit equation (0 on the orbit), for all four
    parameterizations (explicit orbits: ``mu_QK - orbit``).
    Arguments ``(mu_OV, mu_QK, mu_OV_0, mu_QK_0, *PARAMS)``."""
    from derivations.first_integral import orbit
    o = orbit(parameterization)
    e = o.lhs - o.rhs if isinstance(o, sp.Equality) else mu_QK - o
    return numeric(e, (mu_OV, mu_QK, mu_OV_0, mu_QK_0, *PARAMS), backend, stable=False)


@lru_cache(maxsize=None)
def initial_point_fn(parameterization="CACO", backend="numpy"):
    """``(mu_OV(0), mu_QK(0))`` of the paper's initialization with scale eps,
    from :func:`derivations.factorization.initial_point` (collapsed circuits
    start at 0). Arguments ``(eps, b)``."""
    from derivations.factorization import initial_point
    return numeric(tuple(sp.sympify(e) for e in initial_point(parameterization, eps)),
                   (eps, b), backend, stable=False)


@lru_cache(maxsize=None)
def initial_conserved_fn(circuit="QK", backend="numpy"):
    """Conserved quantity C of a factorized circuit at the paper's
    initialization, from :func:`derivations.factorization.initial_conserved`
    (``eps^2 (1/eta_A - 1/eta_B)``). Arguments ``(eps, *PARAMS)``."""
    from derivations.factorization import initial_conserved
    return numeric(initial_conserved(circuit, eps), (eps, *PARAMS), backend, stable=False)


# --------------------------------------------------------------------------
# Sharpness at fixed loss (CACO, zero init, eta_OV = 1, r = eta_QK)
# --------------------------------------------------------------------------

@lru_cache(maxsize=None)
def margin_at_loss_fn(backend="numpy"):
    r"""Margin at loss L: :math:`s = \log(M-1) - \log(\mathrm{expm1}(L))`,
    from :func:`derivations.sharpness.margin_at_loss`. Arguments ``(L, M)``."""
    from derivations.sharpness import margin_at_loss
    return numeric(margin_at_loss(), (L, M), backend)


@lru_cache(maxsize=None)
def state_equation_fn(backend="numpy"):
    r"""State equation F(p; s, r) (= 0 at the state), from
    :func:`derivations.sharpness.state_equation`. Arguments ``(p, s, r, m, n, b, M)``."""
    from derivations.sharpness import state_equation
    return numeric(state_equation(), (p, s, r, m, n, b, M), backend, stable=False)


@lru_cache(maxsize=None)
def state_equation_dp_fn(backend="numpy"):
    """dF/dp of :func:`state_equation_fn` (``sympy.diff``). Same arguments."""
    from derivations.sharpness import state_equation
    return numeric(sp.diff(state_equation(), p), (p, s, r, m, n, b, M), backend, stable=False)


def _odds_of_mu_QK():
    """p as a function of mu_QK: the inverse of state_from_odds' ``mu_QK(p)``
    (``sympy.solve``)."""
    from derivations.sharpness import state_from_odds
    sol = sp.solve(sp.Eq(state_from_odds()["mu_QK"], mu_QK), p)
    if len(sol) != 1:  # pragma: no cover
        raise ArithmeticError(f"mu_QK(p) not uniquely invertible: {sol}")
    return sol[0]


def _split_r(G, var):
    """G = G0 + G_r with G_r the part linear in r (checked: F is linear in r)."""
    if sp.simplify(sp.diff(G, r, 2)) != 0:  # pragma: no cover
        raise ArithmeticError("state equation is not linear in r")
    G_r = sp.expand(sp.diff(G, r) * r)
    return sp.expand(G - G_r), G_r


@lru_cache(maxsize=None)
def state_equation_mu_fn(backend="numpy"):
    r"""The state equation written in u = mu_QK (the Newton variable of
    :func:`numerics.closed_form.state_at_loss`), and its u-derivative.

    p is eliminated with :func:`_odds_of_mu_QK` (``p = m e^{u}/n``), giving
    :math:`G(u) = rac{m}{n}(e^u - 1) + u - rac{r s^2 (M-1)}{2Mb}\,(1 + rac{n}{m}e^{-u})^2`;
    the r-free part has its ``e^u`` replaced by ``expm1(u) + 1`` and expanded
    (mechanically), so that the root keeps full relative accuracy when
    mu_QK is tiny (loss near log M). G is increasing in u.

    Returns a NumericFunction of ``(mu_QK, s, r, m, n, b, M)`` giving ``(G, dG/du)``.
    """
    from derivations.sharpness import state_equation
    G = sp.expand(sp.expand_log(state_equation().subs(p, _odds_of_mu_QK()), force=True))
    G0, G_r = _split_r(G, mu_QK)
    E = sp.Dummy("E")
    G0 = sp.expand(G0.subs(sp.exp(mu_QK), E + 1)).subs(E, expm1(mu_QK))
    G_r = sp.factor(G_r)
    dG = sp.diff(G0, mu_QK) + sp.diff(G_r, mu_QK)
    return numeric((G0 + G_r, dG), (mu_QK, s, r, m, n, b, M), backend, stable=False)


@lru_cache(maxsize=None)
def state_bounds_fn(backend="numpy"):
    r"""Wright-omega candidates bracketing the root of the state equation,
    in u = mu_QK.

    In x = log p the state equation reads
    :math:`G(x) = G_0(x) - k(1+e^{-x})^2` with G increasing and
    :math:`k = r s^2 (M-1)/(2Mb)` (both read off the derived F: k is
    ``-G_r(x=0)/4``; the shape is checked). Using
    :math:`\max(1, e^{-2x}) \le (1+e^{-x})^2 \le 4\max(1, e^{-2x})`
    the equations :math:`G_0 = k`, :math:`G_0|_{e^x	o1} = k e^{-2x}`,
    :math:`G_0 = 4k`, :math:`G_0|_{e^x	o0} = 4k e^{-2x}` are of Lambert
    type; SymPy solves them and they are rewritten with Wright omega (no
    overflow for huge k). The first two give lower bounds (the second when
    it is <= 0), the last two an upper bound (their maximum). The caller
    verifies signs, so the candidates are only a starting bracket.

    Returns a NumericFunction of ``(s, r, m, n, b, M)`` giving the four
    candidates mapped to u = mu_QK(p = e^x).
    """
    from derivations.sharpness import state_equation, state_from_odds
    from derivations.special_functions import lambert_to_wright_omega
    X = x_logp
    G = sp.expand(sp.expand_log(state_equation().subs(p, sp.exp(X)), force=True))
    G0, G_r = _split_r(G, X)
    k = sp.factor(-G_r.subs(X, 0) / 4)
    if sp.simplify(G_r + k * (1 + sp.exp(-X)) ** 2) != 0:  # pragma: no cover
        raise ArithmeticError(f"unexpected r-term of the state equation: {G_r}")

    def root(eq):
        sol = sp.solve(eq.subs(k, c_sym), X)
        return sp.simplify(lambert_to_wright_omega(sp.expand_log(sol[0], force=True)))
    kc = c_sym
    cands = (root(G0 - kc), root(G0.subs(sp.exp(X), 1) - kc * sp.exp(-2 * X)),
             root(G0 - 4 * kc), root(G0.subs(sp.exp(X), 0) - 4 * kc * sp.exp(-2 * X)))
    u_of_x = sp.expand_log(state_from_odds()["mu_QK"].subs(p, sp.exp(X)), force=True)
    cands = tuple(sp.expand(u_of_x.subs(X, cnd)).subs(c_sym, k) for cnd in cands)
    return numeric(cands, (s, r, m, n, b, M), backend, stable=False)


@lru_cache(maxsize=None)
def state_from_mu_QK_fn(backend="numpy"):
    """``{"alpha", "mu_OV", "p"}`` at the state, from
    :func:`derivations.sharpness.state_from_odds` with p eliminated by
    :func:`_odds_of_mu_QK` (so no precision is lost in ``mu_QK = log(n p/m)``).
    Arguments ``(mu_QK, s, m, n, b, M)``."""
    from derivations.sharpness import state_from_odds
    pu = _odds_of_mu_QK()
    d = state_from_odds()
    out = {k: sp.simplify(sp.sympify(d[k]).subs(p, pu)) for k in ("alpha", "mu_OV")}
    out["alpha"] = 1 / sp.expand(1 / out["alpha"])
    out["p"] = pu
    return numeric(out, (mu_QK, s, m, n, b, M), backend)


@lru_cache(maxsize=None)
def state_from_odds_fn(backend="numpy"):
    """``{"alpha", "mu_QK", "mu_OV"}`` from the odds p and the margin s, from
    :func:`derivations.sharpness.state_from_odds`. Arguments ``(p, s, m, n, b, M)``."""
    from derivations.sharpness import state_from_odds
    d = state_from_odds()
    return numeric({k: sp.sympify(d[k]) for k in ("alpha", "mu_QK", "mu_OV")},
                   (p, s, m, n, b, M), backend, stable=False)


@lru_cache(maxsize=None)
def time_integrand_fn(parameterization="CACO", backend="numpy"):
    r"""dt/dmu_OV along the orbit, from
    :func:`derivations.asymptotics.time_integrand`
    (:math:`b(e^{\alpha\mu_{OV}} + M - 1)/(\eta_{OV}\alpha)` with alpha on the orbit),
    after :func:`omega_identity` (alpha = omega/(1 + omega), no cancellation).
    Arguments ``(mu_OV, mu_OV_0, mu_QK_0, *PARAMS)``."""
    from derivations.asymptotics import time_integrand
    e = sp.simplify(omega_identity(time_integrand(parameterization)))
    return numeric(e, (mu_OV, mu_OV_0, mu_QK_0, *PARAMS), backend, stable=False)
