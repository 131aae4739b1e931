r"""Mechanical floating-point rewrites of SymPy expressions: the value is unchanged, only
its evaluation in floating point improves (less rounding, no overflow).

* :func:`stabilize`: ``exp(x) - 1 -> expm1(x)``, ``log(1 + x) -> log1p(x)``;
* :func:`as_log1p`: ``log(u) -> log1p(u - 1)`` with ``u - 1`` simplified;
* :func:`as_logaddexp`: ``log1p(c e^v) -> logaddexp(0, log c + v)`` (applied for the
  float backends only);
* :func:`omega_identity`: :math:`\omega(z) = z - \log\omega(z)` applied once.

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
"""
from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import log1p
from sympy.codegen.numpy_nodes import logaddexp
from sympy.codegen.rewriting import optimize, optims_c99

from ..symbolic.special_functions import wright_omega

__all__ = ["stabilize", "as_log1p", "as_logaddexp", "omega_identity"]


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
    r"""``log1p(c e^{v}) -> logaddexp(0, log(c) + v)``: the same value without
    overflow of ``e^{v}`` (the loss at a large negative margin is about
    ``log(c) + v``, not inf). Other ``log1p`` are left alone: those whose argument
    is not a product of nonnegative factors and exponentials, or has no exponential.

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
    return expr.replace(log1p, repl)


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
