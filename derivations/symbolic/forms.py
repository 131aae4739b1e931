"""The one compact form in which the derivations write their results.

:func:`canonical` is applied to every reduced ODE, family flow and mu flow
(the paper's closed forms of :mod:`derivations.tasks.paper` and the task
engine's :mod:`derivations.engine.reduce`), so that the two routes print the
same expressions.

>>> import sympy as sp
>>> x = sp.Symbol("x", positive=True)
>>> canonical(sp.exp(x) * sp.exp(x) / (2 * sp.exp(2 * x) + 2 * sp.exp(2 * x) * x))
1/(2*(x + 1))
"""
import sympy as sp

__all__ = ["canonical"]


def canonical(expr):
    """A compact form: the log-sum-exp derivative's exponentials combined,
    one fraction, common factors pulled out.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
        The same value, rewritten.
    """
    expr = sp.simplify(sp.powsimp(sp.expand_power_exp(expr), combine="exp"))
    return sp.factor_terms(sp.factor(sp.together(expr)))
