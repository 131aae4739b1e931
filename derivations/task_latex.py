r"""LaTeX sections of the task engine's results, one per built-in task.

:func:`task_sections` returns the LaTeX lines that :func:`derivations.latex.document`
appends to the standalone document: per task its description, and per
parameterization the family found by symmetry, the observables, the reduced
ODEs (or why the system does not close in them), the mapping to the paper's
equations and the first integral or the reason there is none. Every formula is
``sympy.latex`` output (:func:`derivations.latex.tex`) of an engine result,
read from :mod:`derivations.task_catalog`; labels are ``eq:task.<task>.<P>.<what>``.

>>> import sympy as sp
>>> from derivations.task_latex import tex
>>> tex(sp.Symbol("W_QK[q_k,r_k]", real=True) / sp.Symbol("b", positive=True))
'\\frac{(W_{QK})_{q_k r_k}}{b}'
"""
from __future__ import annotations

import sympy as sp

from .vocabulary import PARAMETERIZATIONS


def _esc(text: str) -> str:
    return (text.replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("&", r"\&")
            .replace("%", r"\%").replace("#", r"\#").replace("^", r"\^{}").replace("->", r"$\to$"))


def _names(expr) -> dict:
    """LaTeX names of the engine's symbols: (W_{QK})_{q_k r_k}, mu_{QK}^{(q)}."""
    import re
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


def tex(expr) -> str:
    """:func:`derivations.latex.tex` with the engine's symbol names."""
    from .latex_format import MUL_SYMBOL, SYMBOL_NAMES
    return sp.latex(expr, mul_symbol=MUL_SYMBOL, symbol_names={**SYMBOL_NAMES, **_names(expr)})


def _equation(label, lhs, expr):
    from .latex_format import equation_lines
    return equation_lines(label, expr, lhs, "=", render=tex)


def task_sections() -> list:
    """LaTeX lines: a ``\\section`` per built-in task (see the module docstring)."""
    from .symbols import t
    from .task import TASKS
    from .task_catalog import task_reduction
    out = []
    for name, task in TASKS.items():
        out.append(r"\section{Task \texttt{%s}}\label{sec:task.%s}" % (name, name))
        out.append(_esc(task.description))
        out.append("")
        try:
            task.check_symbolic()
        except ValueError as exc:
            out += [f"The symbolic engine does not reduce this task ({_esc(str(exc))}); its gradient flow is "
                    r"integrated on the full matrices by \texttt{numerics}.", ""]
            continue
        for p in PARAMETERIZATIONS:
            red = task_reduction(name, p)
            base = f"eq:task.{name}.{p}"
            out.append(r"\subsection*{%s, %s}" % (_esc(name), p))
            coords = ", ".join("$" + tex(c.symbol) + "$" for c in red.coordinates)
            out.append(f"Family found by symmetry (orbit coordinates reached from the initialization): {coords}.")
            if red.odes is None:
                out += [f"{_esc(red.note)}.", ""]
                continue
            out.append("Observables (score gaps against the reference group "
                       f"\\texttt{{{_esc(red.reference)}}} and logit gaps):")
            if p == "CACO":
                for k, v in red.observables.items():
                    out += _equation(f"{base}.obs.{k}", k, v)
            out += _equation(f"{base}.alpha", sp.Symbol("alpha"), red.alpha)
            if p == "CACO":
                out += _equation(f"{base}.loss", sp.Symbol("L"), red.loss)
                out.append("The observables follow the gradient flow $\\dot{o} = -G\\,\\nabla_{o} L$ with the "
                           "constant metric $G = J\\,\\mathrm{diag}(\\eta_i/\\lVert U_i\\rVert^2)\\,J^\\top$ "
                           "(rows in the order above):")
                out += _equation(f"{base}.G", sp.Symbol("G"), red.metric)
            out.append("Reduced ODEs:")
            for k, v in (red.odes_alpha or red.odes).items():
                out += _equation(f"{base}.d{k}", sp.Derivative(k, t), v)
            if red.mapping:
                out.append("These are the paper's reduced ODEs with the substitution " + ", ".join(
                    f"${tex(k)} \\to {tex(v)}$" for k, v in red.mapping.items()) + ".")
            if red.first_integral is not None:
                out.append("First integral:")
                out += _equation(f"{base}.H", sp.Symbol("H"), red.first_integral)
                if red.orbit is not None and not isinstance(red.orbit, sp.Equality):
                    out.append("Orbit through $(\\mu_{OV,0}, \\mu_{QK,0})$:")
                    out += _equation(f"{base}.orbit", sp.Symbol("mu_QK"), red.orbit)
            out += [_esc(red.note) + ".", ""]
    return out
