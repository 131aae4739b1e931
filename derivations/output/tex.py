r"""How derived results are written in LaTeX, once for the paper and the tasks.

The symbol names, the product sign, the one :func:`tex` function, the
abbreviation of long results and the ``equation`` environment used by the
document builder :mod:`derivations.output.latex` for the paper's results and
for the task engine's sections alike.

>>> from derivations.symbolic import symbols as S
>>> from derivations.output.tex import tex
>>> tex(S.mu_OV_0 * S.b)
'b\\,\\mu_{OV,0}'
>>> import sympy as sp
>>> tex(sp.Symbol("W_QK[q_k,r_k]", real=True) / sp.Symbol("b", positive=True), engine=True)
'\\frac{(W_{QK})_{q_k r_k}}{b}'
"""
from __future__ import annotations

import re
import unicodedata

import sympy as sp

from ..symbolic import symbols as S

__all__ = ["MUL_SYMBOL", "SYMBOL_NAMES", "ABBREVIATIONS", "LONG", "tex", "engine_names", "abbreviate",
           "equation_lines", "escape", "declare_unicode"]

#: Product sign handed to ``sympy.latex`` (a thin space).
MUL_SYMBOL = r"\,"
#: Nicer names for some symbols (everything else prints with SymPy's defaults).
SYMBOL_NAMES = {
    S.mu_OV_0: r"\mu_{OV,0}",
    S.mu_QK_0: r"\mu_{QK,0}",
    S.ETA_EFF["QK"]: r"\eta^{QK}_{\mathrm{eff}}",
    S.ETA_EFF["OV"]: r"\eta^{OV}_{\mathrm{eff}}",
}
#: Symbols used for abbreviated subexpressions of long results, in order.
ABBREVIATIONS = (sp.Symbol("zeta"), sp.Symbol("xi"))
#: Expressions whose LaTeX is longer than this are abbreviated.
LONG = 300


def engine_names(expr) -> dict:
    """LaTeX names of the task engine's symbols in ``expr``: matrix entries
    ``W_QK[q_k,r_k]`` -> ``(W_{QK})_{q_k r_k}``, group observables
    ``mu_QK_q`` -> ``\\mu_{QK}^{(q)}``.

    Parameters
    ----------
    expr : sympy.Expr or sympy.Symbol

    Returns
    -------
    dict[sympy.Symbol, str]
    """
    out = {}
    for x in sp.sympify(expr).free_symbols | ({expr} if isinstance(expr, sp.Symbol) else set()):
        mt = re.fullmatch(r"W_(\w+)\[(\w)_(\w),(\w)_(\w)\]", x.name)
        if mt:
            w, a, i, c, j = mt.groups()
            out[x] = r"(W_{%s})_{%s_%s %s_%s}" % (w, a, i, c, j)
        mt = re.fullmatch(r"mu_(QK|OV)_(\w+)", x.name)
        if mt:
            out[x] = r"\mu_{%s}^{(%s)}" % mt.groups()
    return out


def tex(expr, engine: bool = False) -> str:
    """``sympy.latex`` with this module's settings; ``engine=True`` also names the
    task engine's symbols (:func:`engine_names`, which take precedence).

    Parameters
    ----------
    expr : sympy.Basic
        An expression, equation, matrix or other SymPy object.
    engine : bool, optional
        Also name the task engine's symbols. Default False.

    Returns
    -------
    str
    """
    names = {**SYMBOL_NAMES, **engine_names(expr)} if engine else SYMBOL_NAMES
    return sp.latex(expr, mul_symbol=MUL_SYMBOL, symbol_names=names)


#: The LaTeX of the characters of plain text that LaTeX would read as markup.
_TEXT_ESCAPES = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#", "^": r"\^{}",
                 "$": r"\$", "~": r"\textasciitilde{}"}


def escape(text: str) -> str:
    r"""Plain text for LaTeX (a task file's description, too): backslash, ``_ & % # ^ $ ~`` escaped, a brace
    that opens or closes no group escaped (balanced braces group, as in ``u_{n_c}``), a control character
    other than a newline as a space (LaTeX refuses it), ``->`` as an arrow.

    Parameters
    ----------
    text : str

    Returns
    -------
    str

    Examples
    --------
    >>> print(escape("costs $5 } {x} ~ 10% a->b"))
    costs \$5 \} {x} \textasciitilde{} 10\% a$\to$b
    """
    unmatched, opened = set(), []
    for i, c in enumerate(text):
        if c == "{":
            opened.append(i)
        elif c == "}":
            if opened:
                opened.pop()
            else:
                unmatched.add(i)
    unmatched.update(opened)
    control = {c for c in text if (c < " " and c != "\n") or c == "\x7f"}
    return "".join("\\" + c if i in unmatched else " " if c in control else _TEXT_ESCAPES.get(c, c)
                   for i, c in enumerate(text)).replace("->", r"$\to$")


def abbreviate(expr):
    """``(reduced, [(symbol, subexpression), ...])``: while the LaTeX is longer
    than :data:`~derivations.output.tex.LONG`, replace the repeated subexpression that saves the most
    LaTeX by the next symbol of :data:`~derivations.output.tex.ABBREVIATIONS`.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    (sympy.Expr, list of (sympy.Symbol, sympy.Expr))
        The expression with the abbreviations put in, and their definitions in order.
    """
    defs = []
    for sym in ABBREVIATIONS:
        if len(tex(expr)) <= LONG:
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
    r"""The lines of an ``equation`` environment ``lhs relation expr`` labelled
    ``label``, long subexpressions of ``expr`` abbreviated (:func:`abbreviate`;
    a matrix is kept whole) and aligned below it; ``render`` writes an
    expression as LaTeX.

    Parameters
    ----------
    label : str
        The ``\label`` of the equation.
    expr : sympy.Expr or sympy.Matrix
    lhs : sympy.Basic, optional
        The left-hand side. Default None (no left-hand side).
    relation : str, optional
        LaTeX of the relation. Default "=".
    render : callable, optional
        Expression -> LaTeX. Default :func:`tex`.

    Returns
    -------
    list of str
    """
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


#: Combining marks and the LaTeX accent commands that put them on a letter.
_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0306": "u", "\u0307": ".",
            "\u0308": '"', "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c", "\u0328": "k"}
#: Greek capitals that LaTeX writes as their Latin twins (it has no command for them).
_LATIN_CAPITALS = {"ALPHA": "A", "BETA": "B", "EPSILON": "E", "ZETA": "Z", "ETA": "H", "IOTA": "I", "KAPPA": "K",
                   "MU": "M", "NU": "N", "OMICRON": "O", "RHO": "P", "TAU": "T", "CHI": "X"}


def _unicode_tex(c: str) -> str:
    """The LaTeX of one character that is not ASCII, valid in text and in math: a Greek letter as its math
    command, a Latin letter with accents as its accent commands, anything else as ``[U+XXXX]``."""
    name = unicodedata.name(c, "")
    greek = re.fullmatch(r"GREEK (SMALL|CAPITAL) LETTER (FINAL SIGMA|\w+)", name)
    if greek:
        letter = {"LAMDA": "LAMBDA", "FINAL SIGMA": "VARSIGMA"}.get(greek.group(2), greek.group(2))
        if greek.group(1) == "CAPITAL" and letter in _LATIN_CAPITALS:
            return r"\text{%s}" % _LATIN_CAPITALS[letter]
        command = letter.lower() if greek.group(1) == "SMALL" else letter.capitalize()
        return r"\ensuremath{\%s}" % command if command != "omicron" else r"\text{o}"
    base, *marks = unicodedata.normalize("NFD", c)
    if base.isascii() and base.isalpha() and marks and all(m in _ACCENTS for m in marks):
        for mark in marks:
            base = "\\%s{%s}" % (_ACCENTS[mark], base)
        return r"\text{%s}" % base
    return r"\text{[U+%04X]}" % ord(c)


def declare_unicode(document: str) -> str:
    r"""A LaTeX document with a ``\DeclareUnicodeCharacter`` before ``\begin{document}`` for every character
    of it that is not ASCII (a task file's group names, parameters and description may hold any letter),
    so that pdflatex typesets it: a Greek letter as its math command (ρ as :math:`\rho`), a Latin letter
    with accents by LaTeX's accent commands, any other character as its code point ``[U+XXXX]``. A
    document of ASCII alone is returned as it is.

    Parameters
    ----------
    document : str
        A LaTeX document with one ``\begin{document}`` line.

    Returns
    -------
    str

    Examples
    --------
    >>> print(declare_unicode("\\begin{document}\n$x_{ρ}$ é\n"))
    \DeclareUnicodeCharacter{00E9}{\text{\'{e}}}
    \DeclareUnicodeCharacter{03C1}{\ensuremath{\rho}}
    \begin{document}
    $x_{ρ}$ é
    <BLANKLINE>
    """
    chars = sorted({c for c in document if not c.isascii()})
    if not chars:
        return document
    lines = "".join(r"\DeclareUnicodeCharacter{%04X}{%s}" % (ord(c), _unicode_tex(c)) + "\n" for c in chars)
    head, begin, tail = document.partition("\\begin{document}")
    return head + lines + begin + tail
