r"""Write the derived theory as a standalone LaTeX document and per-result snippets.

``python -m derivations.latex --output DIR`` writes

* ``DIR/qkov_dynamics.tex``: a standalone article (packages amsmath, amssymb,
  amsthm only) presenting every result of :func:`derivations.catalog.results`
  as a numbered equation ``\label{eq:<name>}``, grouped in sections and amsthm
  ``proposition`` environments with a short explanation each;
* ``DIR/snippets/<name>.tex``: the equation environment of each result alone,
  for ``\input`` into a paper (a ``/`` in a name becomes ``_`` in the file
  name, see :func:`snippet_filename`; the label keeps the catalog name).

Rules
-----
* Every piece of mathematics, in equations and in the prose, is
  ``sympy.latex`` output (:func:`tex`) of a catalog expression or of a SymPy
  object naming the quantity (left-hand sides such as
  ``Derivative(mu_OV, t)``). Nothing is typed by hand. Products are printed
  with a thin space (``mul_symbol=r"\,"``) so that the text parses back
  unambiguously (``\,`` -> ``\cdot``, see ``tests/test_latex.py``).
* Very long expressions are shown with abbreviations: a subexpression that
  occurs at least twice is replaced by :data:`ABBREVIATIONS` (``zeta``, ``xi``)
  and defined on a following line of the same equation (:func:`abbreviate`).
* Snippet layout (line based, relied on by the parse-back test)::

      \begin{equation}
      \label{eq:NAME}
      \begin{aligned}            <- only with abbreviations
      LHS &=                     <- optional; relation "=" or "\sim"
      EXPRESSION                 <- sympy.latex output, one line
      \\                         <- then per abbreviation:
      \zeta &=
      SUBEXPRESSION
      \end{aligned}
      \end{equation}

* The output is byte-identical across runs: fixed order, no dates.

>>> from derivations.latex import snippet, tex
>>> print(snippet("CACO.dmu_OV_dt_alpha"), end="")
\begin{equation}
\label{eq:CACO.dmu_OV_dt_alpha}
\frac{d}{d t} \mu_{OV} =
\frac{\alpha\,\eta_{OV}}{b\,\left(M + e^{\alpha\,\mu_{OV}} - 1\right)}
\end{equation}
"""
from __future__ import annotations

import argparse
import re
import sys
from functools import lru_cache
from pathlib import Path

import sympy as sp

from . import symbols as S

DOCUMENT_NAME = "qkov_dynamics.tex"
SNIPPET_DIR = "snippets"

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

# Names for left-hand sides and prose (SymPy objects; printed by sympy.latex).
H, X, Y, F, W = sp.symbols("H X Y F W")
LOSS = sp.Symbol("L")  # same name as the loss level in sharpness: the loss value
ALPHA_0 = sp.Symbol("alpha_0")
ETA_EFF = {"QK": sp.Symbol("eta_eff^QK"), "OV": sp.Symbol("eta_eff^OV")}
SYMBOL_NAMES.update({ETA_EFF["QK"]: r"\eta^{QK}_{\mathrm{eff}}",
                     ETA_EFF["OV"]: r"\eta^{OV}_{\mathrm{eff}}"})


def tex(expr) -> str:
    """``sympy.latex`` with this module's settings."""
    return sp.latex(expr, mul_symbol=MUL_SYMBOL, symbol_names=SYMBOL_NAMES)


def snippet_filename(name: str) -> str:
    """File name of a result's snippet: ``<name>.tex`` with ``/`` -> ``_``."""
    return name.replace("/", "_") + ".tex"


@lru_cache(maxsize=None)
def _results():
    from .catalog import results
    return results()


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


# --------------------------------------------------------------------------
# Left-hand sides: name -> (SymPy object, relation) or None (no left side).
def _d(f, x=S.t):
    return sp.Derivative(f, x)


def left_side(name: str):
    """The left-hand side of a result (a SymPy object and ``"="``/``"\\sim"``)."""
    res = _results()
    head, _, key = name.partition(".")
    fixed = {
        "model.alpha": S.alpha, "model.loss": LOSS, "model.loss_alpha": LOSS,
        "CACO.alpha_on_orbit": S.alpha, "factorization.induced_flow": _d(W),
        "sharpness.margin": S.s, "sharpness.state_equation": sp.Function("F")(S.p, S.s, S.r),
        "sharpness.state.alpha": S.alpha, "sharpness.state.mu_OV": S.mu_OV,
        "sharpness.state.mu_QK": S.mu_QK,
        "asymptotics.time_integrand": _d(S.t, S.mu_OV),
        "asymptotics.early.alpha_0": ALPHA_0, "asymptotics.early.loss_of_t": LOSS,
        "asymptotics.early.mu_OV_of_t": S.mu_OV, "asymptotics.early.mu_OV_of_t_alpha": S.mu_OV,
        "asymptotics.early.t_of_mu_OV": S.t, "asymptotics.early.t_of_mu_OV_alpha": S.t,
        "asymptotics.late.one_minus_alpha": 1 - S.alpha,
        "asymptotics.late.t_of_mu_late": S.t,
        "asymptotics.late.loss_times_t_limit": sp.Limit(S.t * LOSS, S.t, sp.oo),
        "asymptotics.late.one_minus_alpha_ratio_limit": sp.Limit(
            (1 - S.alpha) / res["asymptotics.late.one_minus_alpha_leading"], S.mu_OV, sp.oo),
    }
    if name in fixed:
        return fixed[name], "="
    if name in ("asymptotics.late.loss_leading",):
        return LOSS, r"\sim"
    if name == "asymptotics.late.one_minus_alpha_leading":
        return 1 - S.alpha, r"\sim"
    if head in ("CACO", "CAFO", "FACO", "FAFO"):
        if key.startswith("dmu_OV_dt"):
            return _d(S.mu_OV), "="
        if key.startswith("dmu_QK_dt"):
            return _d(S.mu_QK), "="
        simple = {"first_integral": (H, "="), "dH_dt": (_d(H), "="), "line_X": (X, "="),
                  "line_Y": (Y, "="), "line_slope": (_d(Y, X), "=")}
        if key in simple:
            return simple[key]
        if key == "orbit":
            return None if isinstance(res[name], sp.Equality) else (S.mu_QK, "=")
    if head == "factorization":
        circuit, _, what = key.partition(".")
        conserved = S.C_QK if circuit == "QK" else S.C_OV
        return {"rate_factor": (ETA_EFF[circuit], "="), "effective_rate": (ETA_EFF[circuit], "="),
                "effective_rate_unbalanced": (ETA_EFF[circuit], "="),
                "conserved": (conserved, "="), "conserved_dt": (_d(conserved), "=")}[what]
    if name.startswith("sharpness.sign"):
        num, den = name.rpartition(".")[2].split("/")
        top = {"dF": F, "dp": S.p, "dalpha": S.alpha, "dmu_OV": S.mu_OV, "dmu_QK": S.mu_QK}[num]
        var = {"dp": S.p, "dr": S.r}[den]
        deriv = _d(top, var)
        return (deriv if ".sign." in name else sp.sign(deriv)), "="
    return None


def snippet(name: str) -> str:
    """The equation environment of one result (see the module docstring)."""
    expr, defs = abbreviate(_results()[name])
    lhs = left_side(name)
    lines = [r"\begin{equation}", r"\label{eq:%s}" % name]
    amp = "&" if defs else ""
    if defs:
        lines.append(r"\begin{aligned}")
    if lhs is not None:
        lines.append(f"{tex(lhs[0])} {amp}{lhs[1]}")
    elif defs:
        lines.append("&")
    lines.append(tex(expr))
    for sym, sub in defs:
        lines += [r"\\", f"{tex(sym)} &=", tex(sub)]
    if defs:
        lines.append(r"\end{aligned}")
    lines.append(r"\end{equation}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# The document. Prose may refer to symbols as <<name>> (a key of _INLINE,
# printed by sympy.latex) and to results as [[result name]] (-> \eqref).
def _inline():
    res = _results()
    d = {str(x): x for e in res.values() for x in e.free_symbols}
    d.update({str(x): x for x in S.SYMBOLS.values()})
    d.update({"H": H, "X": X, "Y": Y, "F": F, "W": W, "zeta": ABBREVIATIONS[0],
              "alpha_0": ALPHA_0, "eta_eff_QK": ETA_EFF["QK"], "eta_eff_OV": ETA_EFF["OV"],
              "loss": LOSS, "alpha_def": sp.Eq(S.alpha, res["model.alpha"]),
              "dmu_OV": _d(S.mu_OV), "dmu_QK": _d(S.mu_QK), "dH": _d(H), "dW": _d(W),
              "C_zero": sp.Eq(S.C_QK, 0), "C_OV_zero": sp.Eq(S.C_OV, 0),
              "r_def": sp.Eq(S.r, S.eta_QK / S.eta_OV), "eta_OV_one": sp.Eq(S.eta_OV, 1),
              "s_def": sp.Eq(S.s, S.alpha * S.mu_OV), "p_def": sp.Eq(S.p, S.alpha / (1 - S.alpha)),
              "alpha_to_1": sp.Limit(S.alpha, S.mu_OV, sp.oo),
              "mu_to_oo": sp.Limit(S.mu_OV, S.t, sp.oo),
              "omega_z": sp.Function("omega")(sp.Symbol("z")),
              "omega_def": sp.Eq(sp.Function("omega")(sp.Symbol("z"))
                                 + sp.log(sp.Function("omega")(sp.Symbol("z"))), sp.Symbol("z")),
              "mu_QK_zero": sp.Eq(S.mu_QK, 0), "origin": sp.Tuple(S.mu_OV_0, S.mu_QK_0),
              "origin_zero": sp.Eq(sp.Tuple(S.mu_OV_0, S.mu_QK_0), sp.Tuple(0, 0)),
              "dF_dp": _d(F, S.p), "dF_dr": _d(F, S.r), "dp_dr": _d(S.p, S.r),
              "Ei": sp.Ei(S.mu_QK), "XY": sp.Tuple(X, Y)})
    return d


def _prose(text: str) -> str:
    inline = _inline()
    text = re.sub(r"<<(\w+)>>", lambda mt: "$" + tex(inline[mt.group(1)]) + "$", text)
    return re.sub(r"\[\[([^\]]+)\]\]", lambda mt: r"\eqref{eq:%s}" % mt.group(1), text)


_PARAMS = ("CACO", "CAFO", "FACO", "FAFO")
_PARAM_TEXT = {
    "CACO": "collapsed query-key and collapsed output-value matrices",
    "CAFO": "collapsed query-key, factorized output-value circuit",
    "FACO": "factorized query-key, collapsed output-value circuit",
    "FAFO": "both circuits factorized",
}


def _sections():
    """``[(title, intro, [block, ...]), ...]``; a block is
    ``("prop", title, label, text, [names])`` or ``("text", text)``."""
    secs = []
    secs.append(("The model", (
        "A single attention layer reads a context of <<m>> relevant and <<n>> irrelevant tokens "
        "(one-hot embeddings scaled by the embedding scale <<b>>) and predicts one of <<M>> classes. "
        "From the paper's initializations the gradient flow stays on an invariant family described by two "
        "scalars: the query-key score gap <<mu_QK>> and the output-value logit gap <<mu_OV>>."), [
        ("prop", "Attention and loss", "prop:model",
         "The total attention on the relevant tokens is [[model.alpha]], and the population "
         "cross-entropy loss is [[model.loss]]; as a function of the attention it is [[model.loss_alpha]].",
         ["model.alpha", "model.loss", "model.loss_alpha"]),
    ]))
    blocks = []
    for name in _PARAMS:
        extra = []
        text = (f"For {name} ({_PARAM_TEXT[name]}), the gradient flow reduces to the two ODEs "
                f"[[{name}.dmu_OV_dt]] and [[{name}.dmu_QK_dt]]. Written with the attention <<alpha>> "
                f"of [[model.alpha]] they read [[{name}.dmu_OV_dt_alpha]] and [[{name}.dmu_QK_dt_alpha]].")
        names = [f"{name}.dmu_OV_dt", f"{name}.dmu_QK_dt", f"{name}.dmu_OV_dt_alpha",
                 f"{name}.dmu_QK_dt_alpha"]
        if name != "CACO":
            text += (f" With unbalanced factors (conserved quantities <<C_QK>>, <<C_OV>> of "
                     f"Section~\\ref{{sec:factorization}}) they become [[{name}.dmu_OV_dt_unbalanced_alpha]] "
                     f"and [[{name}.dmu_QK_dt_unbalanced_alpha]].")
            extra = [f"{name}.dmu_OV_dt_unbalanced_alpha", f"{name}.dmu_QK_dt_unbalanced_alpha"]
        blocks.append(("prop", f"Reduced flow, {name}", f"prop:{name}.reduced", text, names + extra))
    secs.append(("Reduced dynamics", (
        "Each of the four parameterizations (collapsed or factorized query-key and output-value circuits) "
        "reduces to an autonomous system for <<mu_OV>> and <<mu_QK>>. In all of them the "
        "output-value update is driven by the margin through the loss [[model.loss_alpha]], and the "
        "query-key update vanishes when the attention saturates."), blocks))
    secs.append(("Factorization rescales the learning rate", (
        "A circuit written as a product <<W>> of two factors trained with their own rates moves like the "
        "collapsed circuit with an effective, state-dependent rate."), [
        ("prop", "Induced flow", "prop:induced_flow",
         "For a product of factors <<A>> and <<B>> with gradient <<G>> of the loss with respect to the product, "
         "the chain and product rules give the induced flow [[factorization.induced_flow]].",
         ["factorization.induced_flow"]),
        ("prop", "Effective rate and conserved quantity", "prop:effective_rate",
         "On the invariant family the factorized query-key circuit (factor coordinates <<a_Q>>, <<c_K>>) "
         "moves with the rate [[factorization.QK.rate_factor]]; the quantity [[factorization.QK.conserved]] "
         "is conserved, [[factorization.QK.conserved_dt]]. For balanced factors (<<C_zero>>) the rate is "
         "[[factorization.QK.effective_rate]], proportional to the circuit itself; in general it is "
         "[[factorization.QK.effective_rate_unbalanced]]. The output-value circuit (factors <<o_O>>, <<v_V>>) "
         "behaves alike: [[factorization.OV.rate_factor]], [[factorization.OV.conserved]], "
         "[[factorization.OV.conserved_dt]], and [[factorization.OV.effective_rate]] for balanced factors "
         "(<<C_OV_zero>>), [[factorization.OV.effective_rate_unbalanced]] otherwise.",
         ["factorization.QK.rate_factor", "factorization.QK.conserved", "factorization.QK.conserved_dt",
          "factorization.QK.effective_rate", "factorization.QK.effective_rate_unbalanced",
          "factorization.OV.rate_factor", "factorization.OV.conserved", "factorization.OV.conserved_dt",
          "factorization.OV.effective_rate", "factorization.OV.effective_rate_unbalanced"]),
    ]))
    blocks = []
    for name in _PARAMS:
        implicit = isinstance(_results()[f"{name}.orbit"], sp.Equality)
        text = (f"Along the flow of {name} (balanced factors) the function [[{name}.first_integral]] is "
                f"constant: [[{name}.dH_dt]]. In the coordinates [[{name}.line_X]] and [[{name}.line_Y]] "
                f"every trajectory is a straight line of slope [[{name}.line_slope]], set by the learning "
                f"rates. Through the initial point <<origin>> the orbit is ")
        if implicit:
            text += (f"the implicit curve [[{name}.orbit]] (the exponential integral <<Ei>> does not invert "
                     f"in closed form).")
        else:
            text += (f"explicit, [[{name}.orbit]], with the Wright omega function <<omega_z>>, the "
                     f"solution of <<omega_def>>.")
        names = [f"{name}.first_integral", f"{name}.dH_dt", f"{name}.line_X", f"{name}.line_Y",
                 f"{name}.line_slope", f"{name}.orbit"]
        if name == "CACO":
            text += " On this orbit the attention is [[CACO.alpha_on_orbit]]."
            names.append("CACO.alpha_on_orbit")
        blocks.append(("prop", f"First integral and orbits, {name}", f"prop:{name}.orbit", text, names))
    secs.append(("First integrals: the parameters move along a line", (
        "Dividing the two reduced ODEs, the margin terms cancel and the orbit equation separates; "
        "integrating it gives a first integral <<H>>."), blocks))
    secs.append(("Faster query-key learning sharpens attention", (
        "Compare CACO runs from the origin (<<origin_zero>>) with <<eta_OV_one>> and rate ratio "
        "<<r_def>> at the same loss level <<L>>."), [
        ("prop", "Fixed-loss sharpness", "prop:sharpness",
         "At loss <<L>> the margin <<s_def>> is fixed, [[sharpness.margin]]. Through the attention odds "
         "<<p_def>> the state is [[sharpness.state.alpha]], [[sharpness.state.mu_QK]], "
         "[[sharpness.state.mu_OV]], and the orbit through the origin becomes the state equation "
         "[[sharpness.state_equation]], whose root is the state at loss <<L>>. Its derivatives "
         "[[sharpness.sign.dF/dp]] and [[sharpness.sign.dF/dr]] have the signs [[sharpness.sign_value.dF/dp]] "
         "and [[sharpness.sign_value.dF/dr]], so by implicit differentiation [[sharpness.sign.dp/dr]] with "
         "[[sharpness.sign_value.dp/dr]]. Hence [[sharpness.sign.dalpha/dr]], [[sharpness.sign.dmu_QK/dr]], "
         "[[sharpness.sign.dmu_OV/dr]] with signs [[sharpness.sign_value.dalpha/dr]], "
         "[[sharpness.sign_value.dmu_QK/dr]], [[sharpness.sign_value.dmu_OV/dr]]: at a fixed loss, faster "
         "query-key learning gives sharper attention and a smaller output-value gap.",
         ["sharpness.margin", "sharpness.state.alpha", "sharpness.state.mu_QK", "sharpness.state.mu_OV",
          "sharpness.state_equation", "sharpness.sign.dF/dp", "sharpness.sign.dF/dr",
          "sharpness.sign_value.dF/dp", "sharpness.sign_value.dF/dr", "sharpness.sign.dp/dr",
          "sharpness.sign_value.dp/dr", "sharpness.sign.dalpha/dr", "sharpness.sign.dmu_QK/dr",
          "sharpness.sign.dmu_OV/dr", "sharpness.sign_value.dalpha/dr", "sharpness.sign_value.dmu_QK/dr",
          "sharpness.sign_value.dmu_OV/dr"]),
    ]))
    secs.append(("Time course", (
        "Time along an orbit is a quadrature of the inverse output-value velocity."), [
        ("prop", "Time along the orbit", "prop:time",
         "Along the CACO orbit [[CACO.orbit]], time is the integral over <<mu_OV>> of [[asymptotics.time_integrand]].",
         ["asymptotics.time_integrand"]),
        ("prop", "Early phase", "prop:early",
         "While <<mu_QK_zero>> approximately, the attention stays at its initial value [[asymptotics.early.alpha_0]]. "
         "Then the time to reach <<mu_OV>> is [[asymptotics.early.t_of_mu_OV]], in general form "
         "[[asymptotics.early.t_of_mu_OV_alpha]], and it inverts with the Wright omega function: "
         "[[asymptotics.early.mu_OV_of_t]], or [[asymptotics.early.mu_OV_of_t_alpha]]. The loss decays as "
         "[[asymptotics.early.loss_of_t]].",
         ["asymptotics.early.alpha_0", "asymptotics.early.t_of_mu_OV", "asymptotics.early.t_of_mu_OV_alpha",
          "asymptotics.early.mu_OV_of_t", "asymptotics.early.mu_OV_of_t_alpha", "asymptotics.early.loss_of_t"]),
        ("prop", "Late-time asymptotics", "prop:late",
         "Along the CACO orbit from the origin the irrelevant attention is [[asymptotics.late.one_minus_alpha]]; "
         "as the output-value gap grows it decays like [[asymptotics.late.one_minus_alpha_leading]], indeed "
         "[[asymptotics.late.one_minus_alpha_ratio_limit]]. With the attention saturated the margin grows as "
         "[[asymptotics.late.t_of_mu_late]], so the loss decays like [[asymptotics.late.loss_leading]]: "
         "[[asymptotics.late.loss_times_t_limit]].",
         ["asymptotics.late.one_minus_alpha", "asymptotics.late.one_minus_alpha_leading",
          "asymptotics.late.one_minus_alpha_ratio_limit", "asymptotics.late.t_of_mu_late",
          "asymptotics.late.loss_leading", "asymptotics.late.loss_times_t_limit"]),
    ]))
    covered = {n for _, _, bl in secs for b in bl if b[0] == "prop" for n in b[4]}
    rest = [n for n in _results() if n not in covered]
    if rest:  # results added to the catalog after this text was written
        secs.append(("Further results", "Results without a dedicated explanation yet.",
                     [("prop", "Further results", "prop:further", "", rest)]))
    return secs


_SECTION_LABELS = {"Factorization rescales the learning rate": "sec:factorization"}


def document() -> str:
    """The standalone document as a string."""
    out = [r"\documentclass[10pt]{article}",
           r"\usepackage{amsmath}", r"\usepackage{amssymb}", r"\usepackage{amsthm}",
           r"\setlength{\textwidth}{17.5cm}", r"\setlength{\oddsidemargin}{-0.6cm}",
           r"\setlength{\evensidemargin}{-0.6cm}", r"\setlength{\textheight}{23cm}",
           r"\setlength{\topmargin}{-1.5cm}",
           r"\newtheorem{proposition}{Proposition}",
           r"\allowdisplaybreaks",
           r"\title{Query-key / output-value learning dynamics:\\ derived results}",
           r"\author{Generated by \texttt{python -m derivations.latex}}",
           r"\date{}",
           r"\begin{document}", r"\maketitle", "",
           _prose("This document is generated from the SymPy derivations of the package "
                  r"\texttt{qkov} (\texttt{derivations.catalog}); every formula is printed by "
                  r"\texttt{sympy.latex} from the derived expression. It follows ``Faster Query-Key "
                  r"Learning Sharpens Attention in Self-Attention Models'' (Vashisht and Ramaswamy, ICML 2026). "
                  "Long expressions use an abbreviation <<zeta>> (and a second one) for a repeated "
                  "subexpression, defined in the same display."), ""]
    for title, intro, blocks in _sections():
        label = _SECTION_LABELS.get(title)
        out.append(r"\section{%s}" % title + (r"\label{%s}" % label if label else ""))
        out.append(_prose(intro))
        out.append("")
        for block in blocks:
            _, ptitle, plabel, text, names = block
            out.append(r"\begin{proposition}[%s]\label{%s}" % (ptitle, plabel))
            if text:
                out.append(_prose(text))
            for name in names:
                out.append(snippet(name).rstrip("\n"))
            out.append(r"\end{proposition}")
            out.append("")
    from .task_latex import task_sections   # a section per built-in task (task engine)
    out += task_sections()
    out.append(r"\end{document}")
    return "\n".join(out) + "\n"


def write(output: Path) -> list[Path]:
    """Write the document and all snippets below ``output``; returns the paths."""
    output = Path(output)
    snip_dir = output / SNIPPET_DIR
    snip_dir.mkdir(parents=True, exist_ok=True)
    written = []
    doc = output / DOCUMENT_NAME
    doc.write_text(document())
    written.append(doc)
    for name in sorted(_results()):
        path = snip_dir / snippet_filename(name)
        path.write_text(snippet(name))
        written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m derivations.latex",
                                     description="Write the derived results as LaTeX.")
    parser.add_argument("--output", required=True, type=Path, help="output directory")
    args = parser.parse_args(argv)
    paths = write(args.output)
    print(f"wrote {paths[0]} and {len(paths) - 1} snippets in {args.output / SNIPPET_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
