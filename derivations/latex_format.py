r"""How the derived results are written in LaTeX: the symbol names, the
product sign, the abbreviation of long results and the ``equation``
environment, shared by the paper's document (:mod:`derivations.latex`) and
the task sections (:mod:`derivations.task_latex`).

>>> from derivations import symbols as S
>>> from derivations.latex_format import tex
>>> tex(S.mu_OV_0 * S.b)
'b\\,\\mu_{OV,0}'
"""
from __future__ import annotations

import sympy as sp

from . import symbols as S

__all__ = ["MUL_SYMBOL", "SYMBOL_NAMES", "ABBREVIATIONS", "LONG", "tex", "abbreviate", "equation_lines"]

#: Product sign handed to ``sympy.latex`` (a thin space).
MUL_SYMBOL = r"\,"
#: Nicer names for some symbols (everything else prints with SymPy's defaults).
SYMBOL_NAMES = {
    S.mu_OV_0: r"\mu_{OV,0}",
    S.mu_QK_0: r"\mu_{QK,0}",
}
#: Symbols used for abbreviated subexpressions of long results, in order.
ABBREVIATIONS = (sp.Symbol("zeta"), sp.Symbol("xi"))
#: Expressions whose LaTeX is longer than this are abbreviated.
LONG = 300

SYMBOL_NAMES.update({S.ETA_EFF["QK"]: r"\eta^{QK}_{\mathrm{eff}}",
                     S.ETA_EFF["OV"]: r"\eta^{OV}_{\mathrm{eff}}"})


def tex(expr) -> str:
    """``sympy.latex`` with this module's settings."""
    return sp.latex(expr, mul_symbol=MUL_SYMBOL, symbol_names=SYMBOL_NAMES)


def abbreviate(expr, limit: int = LONG):
    """``(reduced, [(symbol, subexpression), ...])``: while the LaTeX is longer
    than ``limit``, replace the repeated subexpression that saves the most
    LaTeX by the next symbol of :data:`ABBREVIATIONS`."""
    defs = []
    for sym in ABBREVIATIONS:
        if len(tex(expr)) <= limit:
            break
        counts = {}
        for node in sp.preorder_traversal(expr):
            if not node.is_Atom and node != expr:
                counts[node] = counts.get(node, 0) + 1
        # saving in LaTeX length; ties broken by srepr (deterministic)
        scored = [((c - 1) * len(tex(e)), sp.srepr(e), e) for e, c in counts.items() if c >= 2]
        scored = [x for x in scored if x[0] >= 40]
        if not scored:
            break
        best = max(scored, key=lambda x: x[:2])[2]
        expr = expr.xreplace({best: sym})
        defs.append((sym, best))
    return expr, defs


def equation_lines(label: str, expr, lhs=None, relation: str = "=", render=tex) -> list:
    """The lines of an ``equation`` environment ``lhs relation expr`` labelled
    ``label``, long subexpressions of ``expr`` abbreviated (:func:`abbreviate`;
    a matrix is kept whole) and aligned below it; ``render`` writes an
    expression as LaTeX."""
    expr, defs = (expr, []) if isinstance(expr, sp.MatrixBase) else abbreviate(expr)
    lines = [r"\begin{equation}", r"\label{%s}" % label]
    amp = "&" if defs else ""
    if defs:
        lines.append(r"\begin{aligned}")
    if lhs is not None:
        lines.append(f"{render(lhs)} {amp}{relation}")
    elif defs:
        lines.append("&")
    lines.append(render(expr))
    for sym, sub in defs:
        lines += [r"\\", f"{render(sym)} &=", render(sub)]
    if defs:
        lines.append(r"\end{aligned}")
    lines.append(r"\end{equation}")
    return lines
