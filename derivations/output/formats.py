"""How an expression is printed in each format of ``print_dynamics``."""
from __future__ import annotations

__all__ = ["OneLine", "PRINTED_FORMATS", "format_expression"]

#: The formats whose texts the printed-results cache keeps (``json`` shows ``text``).
PRINTED_FORMATS = ("pretty", "text", "latex")


class OneLine:
    """An expression that the pretty format prints as one line (``str``).

    Parameters
    ----------
    expr : sympy.Expr
        The expression.
    """

    def __init__(self, expr):
        self.expr = expr


def format_expression(expr, fmt) -> str:
    """The text of ``expr`` in the format ``fmt``.

    Parameters
    ----------
    expr : sympy.Expr, OneLine or str
        A string is returned as it is; a :class:`OneLine` prints on one line.
    fmt : str
        ``"pretty"`` (unicode, unwrapped), ``"latex"``, or anything else for ``str``.

    Returns
    -------
    str
    """
    if isinstance(expr, str):       # a printed text (the printed-results cache): no SymPy imported
        return expr
    import sympy as sp
    if isinstance(expr, OneLine):
        return sp.latex(expr.expr) if fmt == "latex" else str(expr.expr)
    if fmt == "pretty":
        return sp.pretty(expr, use_unicode=True, wrap_line=False)
    return sp.latex(expr) if fmt == "latex" else str(expr)
