r"""The LaTeX section "Where attention goes": the master flow of ``query-copies`` and what it decides.

:func:`attention_section` returns the lines of one ``\section``: the rescaling and
:math:`\Lambda`, the master flow's equations (from
:func:`derivations.tasks.crossover.master_flow`, printed by ``sympy.latex``), the R = 1
exchange symmetry and sign identity, the window's two signs and the early growth ratio, where
the statements do not hold, and two tables of stored numbers (:mod:`derivations.output.attention_data`,
read as data: nothing here computes them): the crossover ratios of
``python -m numerics.experiments boundary`` (:func:`crossover_table`) and the SGD runs of
``python -m numerics.experiments sweep --task query-copies`` at :math:`r^*/8` and :math:`8 r^*`
beside the theory (:func:`sgd_table`).

>>> lines = attention_section()
>>> lines[0]
'\\section{Where attention goes}\\label{sec:attention}'
"""
from __future__ import annotations

import functools

import sympy as sp

from .attention_data import crossover_rows, sgd_runs
from .tex import equation_lines, escape

__all__ = ["attention_section", "crossover_table", "sgd_table"]


@functools.lru_cache(maxsize=1)
def _derived():
    from ..task_catalog import task_reduction
    from ..tasks.crossover import (early_growth_ratio, exchange_symmetry, master_flow,
                                   no_crossover_identity, window_signs)
    flow = master_flow("query-copies", task_reduction("query-copies", "CACO"))
    s, m, R = flow.symbol("s"), flow.symbol("m"), flow.symbol("R")
    one = flow.subs({R: 1})
    return {"flow": flow, "identity": no_crossover_identity(one)[0],
            "symmetric": exchange_symmetry(one, {s: m, m: s}),
            "symmetric_R": exchange_symmetry(flow, {s: m, m: s}),
            "window": window_signs(flow), "early": early_growth_ratio(flow)}


def _intro() -> list:
    return [
        r"The engine's reduced CACO flow of every task of the \texttt{query-copies} shape is a gradient "
        r"flow with a constant diagonal metric whose loss depends on one margin $u = \sum_g a_g y_g$, "
        r"$L = \log(1 + (M-1)e^{-u})$. Write $\ell(L) = \log\frac{M-1}{e^L-1}$ for the margin at the "
        r"stopping loss, scale the logit gaps $y = \ell\,Y$, re-time by $d\sigma = "
        r"\frac{\eta_{OV}\,\psi(u)}{b(M-1)\ell}\,dt$ with $\psi = -dL/du > 0$, and set",
        *equation_lines("eq:attention.Lambda", sp.Symbol("r") * (sp.Symbol("M") - 1)
                        * sp.Symbol("ell") ** 2 / (sp.Symbol("M") * sp.Symbol("b")), sp.Symbol("Lambda")),
        r"($r = \eta_{QK}/\eta_{OV}$). The stopping loss is reached where $U = \sum_g a_g Y_g = 1$, and "
        r"the rescaled flow below holds no symbol of $\eta_{QK}, \eta_{OV}, b, M, L$ besides $\Lambda$ "
        r"(checked symbolically). From zero ($Y(0) = 0$) the state at the stopping loss, and every "
        r"attention share, is a function of $\Lambda$ alone: one master curve per task, and a crossover "
        r"$\Lambda^*$ gives $r^* = \Lambda^* M b/((M-1)\ell(L)^2)$ at every $(L, M, b)$.", ""]


def _g(x, digits=4) -> str:
    return "--" if x is None else f"{x:.{digits}g}"


def _relations(text: str) -> str:
    """Plain text with its comparisons as math (``<`` is not a text character of LaTeX's fonts)."""
    for plain, math in ((">=", r"$\ge$"), ("<=", r"$\le$"), ("<", "$<$"), (">", "$>$")):
        text = text.replace(plain, math)
    return text


def _tabular(columns, rows) -> list:
    return [r"\begin{center}", r"\begin{tabular}{" + "r" * len(columns) + "}", r"\hline",
            " & ".join(columns) + r" \\", r"\hline", *(" & ".join(row) + r" \\" for row in rows),
            r"\hline", r"\end{tabular}", r"\end{center}"]


def crossover_table() -> list:
    """The LaTeX lines of the table of crossover ratios: one row per stored record
    (:func:`derivations.output.attention_data.crossover_rows`; ``--`` and the reason where there is
    none).

    Returns
    -------
    list of str
    """
    rows = crossover_rows()
    body = [[escape(r["setting"]), *(_g(r["task"][k]) for k in ("s", "R", "m", "n", "M", "b")),
             _g(r["target_loss"]), _g(r["crossover_lambda"]), _g(r["crossover_ratio"])] for r in rows]
    reasons = sorted({r["reason"] for r in rows if r["crossover_ratio"] is None})
    lines = _tabular(["setting", "$s$", "$R$", "$m$", "$n$", "$M$", "$b$", "$L$", r"$\Lambda^*$", "$r^*$"], body)
    return lines + [r"Where there is none (--): " + _relations(escape("; ".join(reasons))) + "." if reasons else "", ""]


def sgd_table() -> list:
    """The LaTeX lines of the table of SGD runs beside the theory: every stored run
    (:func:`~derivations.output.attention_data.sgd_runs`) of a setting whose crossover ratio at
    the run's target loss is stored (:func:`~derivations.output.attention_data.crossover_rows`),
    in the stored order.

    Returns
    -------
    list of str
    """
    runs = sgd_runs()
    crossover = {(r["setting"], r["target_loss"]): r["crossover_ratio"] for r in crossover_rows()}
    body = [[escape(run["setting"]), _g(run["ratio"]), _g(crossover[run["setting"], run["target_loss"]]),
             str(run["seed"]), f"{run['loss']:.4f}",
             *(f"{run[k]:.3f}" for k in ("self_attention", "relevant_attention", "theory_self_attention",
                                          "theory_relevant_attention"))]
            for run in runs if (run["setting"], run["target_loss"]) in crossover]
    return _tabular(["setting", "$r$", "$r^*$", "seed", "loss", "SGD self", "SGD relevant", "theory self",
                     "theory relevant"], body)


def _tables() -> list:
    return [
        r"\paragraph{Crossover ratios.} Each row is \texttt{python -m numerics.experiments boundary} "
        r"on \texttt{query-copies} (CACO from zero); the rows \texttt{authors-M4} and "
        r"\texttt{authors-M20} take the authors' expected counts as a \texttt{query-copies} task, a "
        r"proxy, not the authors' task itself.", "", *crossover_table(),
        r"\paragraph{SGD at $r^*/8$ and $8r^*$.} \texttt{python -m numerics.experiments sweep --task "
        r"query-copies} (CACO, three seeds, the SGD models' small identity start) at the settings of the "
        r"table above with the same name, one row per seed: the loss it measured, its self and relevant "
        r"shares, and the theory's (the expected-count flow from the seed's own start read at that loss). "
        r"Below $r^*$ the relevant tokens get more attention than the query's token, above it less; "
        r"outside the window (no $r^*$) one of them leads at both ratios.", "", *sgd_table()]


def attention_section() -> list:
    """The LaTeX lines of the section (see the module docstring)."""
    d = _derived()
    flow = d["flow"]
    out = [r"\section{Where attention goes}\label{sec:attention}", *_intro()]
    out.append(r"The master flow of \texttt{query-copies} ($s$ attended copies of the query's token, "
               r"$m$ relevant copies over $R$ types; score gaps $x_q = \mu_{QK q}$, $x_r = \mu_{QK}$, "
               r"scaled logit gaps $Y_q$, $Y_r$, shares $a_q$, $a_r$):")
    for g in (flow.self_group, flow.relevant_group):
        for v in (flow.x[g], flow.Y[g]):
            out += equation_lines(f"eq:attention.d{v}", flow.rhs[v], sp.Derivative(v, sp.Symbol("sigma")))
    small, large = d["window"]
    out += [
        r"\paragraph{One relevant type.} With $R = 1$ the flow is "
        + ("" if d["symmetric"] else "not ") + r"invariant under exchanging the self and relevant "
        r"groups together with $s \leftrightarrow m$ (checked; for $R > 1$ it is "
        + ("" if d["symmetric_R"] else "not") + r"). On the edge $x_q = x_r$ of the region "
        r"$\{x_q \ge x_r,\ Y_q \ge Y_r\}$, with $A = a_q$, $B = a_r$, $E = Y_q - Y_r$, the growth of "
        r"$x_q - x_r$ is (a simplification to zero checks it)",
        *equation_lines("eq:attention.edge", d["identity"],
                        sp.Derivative(sp.Symbol("x_q") - sp.Symbol("x_r"), sp.Symbol("sigma"))),
        r"which is $\ge 0$ where $A > B$, $A + B \le 1$, $E \ge 0$, $Y_r \ge 0$, while "
        r"$dE/d\sigma = A - B > 0$: the region is forward invariant, so from zero the sign of "
        r"(self share $-$ relevant share) is the sign of $s - m$ at every ratio and loss; at $s = m$ "
        r"the shares are equal (tie).", "",
        r"\paragraph{The window.} At the start, $Z_0$ times the self minus relevant share (which "
        r"decides $\Lambda \to 0$, score gaps frozen) and $Z_0$ times the difference of the logit gaps' "
        r"growth rates (which decides $\Lambda \to \infty$, where the score gaps ascend $U$ toward the "
        r"faster-growing logit gap) are",
        *equation_lines("eq:attention.small", small, sp.Symbol("D_0")),
        *equation_lines("eq:attention.large", large, sp.Symbol(r"D_\infty")),
        r"so the relevant tokens lead at small $\Lambda$ and the query's token at large $\Lambda$ "
        r"exactly when $m/R < s < m$: the window of a crossover. That the difference changes sign "
        r"once in between is observed numerically (\texttt{numerics.dynamics.crossover}), not derived.", "",
        r"\paragraph{Early phase.} From zero, $Y = \sigma Y'(0) + O(\sigma^2)$ and "
        r"$x_g = \Lambda k_g \sigma^2/2 + O(\sigma^3)$; the ratio of the self and relevant score gaps",
        *equation_lines("eq:attention.early", d["early"], sp.Symbol("k_q") / sp.Symbol("k_r")),
        r"holds no $\Lambda$: it does not depend on the learning-rate ratio.", "",
        r"\paragraph{Where this does not hold.} " + escape(
            "A start with nonzero logit gaps (Y(0) = y(0)/l then depends on L; e.g. the factor "
            "initialisation of the factorized circuits); the factorized parameterizations FACO, CAFO, "
            "FAFO, whose metric is not constant; tasks with an embedded irrelevant group, scaled scores "
            "or copies of other classes' tokens (not of the query-copies shape)."), ""]
    return out + _tables()
