r"""Mechanical floating-point rewrites of SymPy expressions: the value is unchanged, only
its evaluation in floating point improves (less rounding, no overflow).

* :func:`stabilize`: ``exp(x) - 1 -> expm1(x)``, ``log(1 + x) -> log1p(x)``;
* :func:`as_log1p`: ``log(u) -> log1p(u - 1)`` with ``u - 1`` simplified;
* :func:`as_logaddexp`: ``log1p(c e^v)`` and ``log(1 + c e^v)`` ``-> logaddexp(0, log c + v)``
  (applied for the float backends only);
* :func:`cancel_fractions`: ``x/(x + y) - 1 -> -y/(x + y)``, a sum over one denominator whose
  numerators cancel, cancelled exactly;
* :func:`as_shares`: ``c x/(x + y) -> c/(1 + y/x)``, a share of a sum divided through by its term;
* :func:`omega_identity`: :math:`\omega(z) = z - \log\omega(z)` applied once;
* :func:`float_form`: the rewrites of a run-time lambdified expression, for one backend.

The generator of ``numerics/_generated.py`` (:mod:`derivations.output.numeric_codegen`)
applies them to the catalog's expressions before printing.

>>> import sympy as sp
>>> from derivations.output.float_rewrites import as_log1p, as_logaddexp, stabilize
>>> x = sp.Symbol("x", real=True)
>>> stabilize(sp.exp(x) - 1)
expm1(x)
>>> as_log1p(sp.log(1 + 3 * sp.exp(-x)))
log1p(3*exp(-x))
>>> as_logaddexp(as_log1p(sp.log(1 + 3 * sp.exp(-x))))
logaddexp(0, -x + log(3))
>>> as_logaddexp(sp.log(1 + 3 * sp.exp(-x)))
logaddexp(0, -x + log(3))
>>> cancel_fractions(sp.exp(x) / (sp.exp(x) + 3) - 1)
-3/(exp(x) + 3)
>>> cancel_fractions(sp.exp(x) / (sp.exp(x) + 3) - 1) * sp.exp(x) / (sp.exp(x) + 3)
exp(x)*(-3/(exp(x) + 3))/(exp(x) + 3)
>>> as_shares(2 * sp.exp(x) / (sp.exp(x) + 3))
2/(1 + 3*exp(-x))
"""
from __future__ import annotations

from collections import Counter

import sympy as sp
from sympy.codegen.cfunctions import log1p
from sympy.codegen.numpy_nodes import logaddexp
from sympy.codegen.rewriting import optimize, optims_c99

from ..symbolic.special_functions import wright_omega

__all__ = ["stabilize", "as_log1p", "as_logaddexp", "cancel_fractions", "as_shares", "omega_identity",
           "float_form"]


def stabilize(expr):
    r"""``exp(x) - 1 -> expm1(x)``, ``log(1 + x) -> log1p(x)`` (SymPy's
    ``optims_c99`` rewriting): the value is unchanged, only rounding improves.

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
    simplified (e.g. ``log(e^{-s}(e^s + M - 1)) -> log1p((M-1) e^{-s})``).

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
    """
    def repl(arg):
        return log1p(sp.factor(sp.expand(arg - 1)))
    return expr.replace(sp.log, repl)


def as_logaddexp(expr):
    r"""``log1p(c e^{v})`` and ``log(1 + c e^{v})`` ``-> logaddexp(0, log(c) + v)``: the same
    value without overflow of ``e^{v}`` (the loss at a large negative margin is about
    ``log(c) + v``, not inf) and without rounding ``1 + c e^{v}`` (the loss at a large
    margin is about ``c e^{v}``, to full relative precision). Other ``log1p`` and ``log``
    are left alone: those whose argument (less the 1) is not a product of nonnegative
    factors and exponentials, or has no exponential.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
    """
    def repl(arg):
        coeff = sp.S.One
        exps = []
        for factor in sp.Mul.make_args(arg):
            if isinstance(factor, sp.exp):
                exps.append(factor.args[0])
            elif factor.is_nonnegative:      # log(0) = -inf is still the right value
                coeff *= factor
            else:
                return log1p(arg)
        if not exps:
            return log1p(arg)
        return logaddexp(sp.S.Zero, sp.log(coeff) + sp.Add(*exps))

    def one_plus(arg):
        rest = sp.Add(*(t for t in sp.Add.make_args(arg) if t != 1))
        if not arg.is_Add or rest == arg or rest.is_Add:
            return sp.log(arg)
        out = repl(rest)
        return sp.log(arg) if isinstance(out, log1p) else out
    return expr.replace(log1p, repl).replace(sp.log, one_plus)


def cancel_fractions(expr):
    r"""A sum of terms over one sum ``D`` and terms without a denominator, whose numerators
    over ``D`` cancel in part, written as one fraction: ``x/(x + y) - 1 -> -y/(x + y)``
    (``1 - alpha`` without cancellation near ``alpha = 1``). The terms without a denominator
    are multiplied into the terms of ``D`` and SymPy collects equal terms (nothing is
    expanded, so the cost stays that of the sum); sums in which no terms of opposite sign
    cancel are left alone. Exponentials are not read as denominators (``sympy.fraction(exact=True)``).
    The fraction is one unevaluated factor (:class:`sympy.UnevaluatedExpr`), computed apart as
    the sum was.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
    """
    def repl(add):
        parts = [sp.fraction(t, exact=True) for t in add.args]
        dens = {d for _, d in parts if d != 1}
        if len(dens) != 1 or not next(iter(dens)).is_Add:
            return add
        (D,) = dens
        terms = [t for n, d in parts for t in (sp.Add.make_args(n) if d == D else (n * u for u in D.args))]
        coeffs = {}
        for t in terms:
            k, rest = t.as_coeff_Mul()
            coeffs.setdefault(rest, []).append(k)
        if not any(len(ks) > 1 and abs(sum(ks)) < max(map(abs, ks)) for ks in coeffs.values()):
            return add          # nothing of opposite sign cancels
        # one factor, as the sum was: SymPy would merge 1/D with the product's other 1/D, whose
        # printed product of denominators underflows sooner (m = n = b = 1e-100)
        return sp.UnevaluatedExpr(sp.Add(*terms) / D)
    return expr.replace(lambda e: e.is_Add, repl)


def as_shares(expr):
    r"""``c t/(t + u + ...) -> c/(1 + u/t + ...)``: a product holding the reciprocal of a sum
    ``D`` and all factors of one of its terms ``t``, a term with an exponential, divided
    through by ``t`` (exponentials combined, :func:`sympy.powsimp`). The share of the
    largest term stays finite where its exponential overflows (``m e^u/(m e^u + n)`` at
    ``u = 800``: ``1/(1 + n e^{-u}/m) = 1``, not ``inf/inf``); a share without an
    exponential above (``n/(m e^u + n)``) is 0 there as it stands and is left alone.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
    """
    def share(mul):
        factors = Counter(sp.Mul.make_args(mul))
        for f in factors:
            if not (f.is_Pow and f.exp == -1 and f.base.is_Add):
                continue
            rest = factors - Counter({f: 1})
            for t in f.base.args:
                term = Counter(sp.Mul.make_args(t))
                if t.has(sp.exp) and not term - rest:       # every factor of t among the product's others
                    denom = sp.Add(*(sp.powsimp(u / t) for u in f.base.args))
                    return sp.Mul(*(rest - term).elements()) / denom
        return mul
    return expr.replace(lambda e: e.is_Mul, share)


def omega_identity(expr):
    r"""Apply :math:`\omega(z) = z - \log\omega(z)` once to every
    ``wright_omega(z)`` and expand: the orbit
    :math:`\mu_{QK} = K - \omega(K + \log(m/n))` becomes
    :math:`\log\omega(K + \log(m/n)) - \log(m/n)`, K cancelling symbolically.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
    """
    return sp.expand(expr.xreplace({w: w.args[0] - sp.log(w) for w in expr.atoms(wright_omega)}))


def float_form(expr, backend, *, stable=True, shares=False):
    r"""The rewrites of an expression lambdified at run time for ``backend``:
    (``stable``) :func:`cancel_fractions`, then, for the float backends (``numpy``,
    ``math``), :func:`as_logaddexp`, then :func:`stabilize`; and last (``shares``)
    :func:`as_shares` (``stabilize`` would write the shares back over their sums). Every
    step leaves the value unchanged.

    Parameters
    ----------
    expr : sympy.Expr
    backend : {"numpy", "math", "mpmath"}
    stable : bool, optional
        The rewrites against cancellation and overflow (default True).
    shares : bool, optional
        Also divide shares of sums through by their term (:func:`as_shares`): for the
        attention and the loss, whose shares of exponential sums overflow otherwise.

    Returns
    -------
    sympy.Expr
    """
    if stable:
        expr = cancel_fractions(expr)
        if backend in ("numpy", "math"):
            expr = as_logaddexp(expr)
        expr = stabilize(expr)
    return as_shares(expr) if shares else expr
