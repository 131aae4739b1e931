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
  occurs at least twice is replaced by :data:`~derivations.latex_format.ABBREVIATIONS` (``zeta``, ``xi``)
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
import os
import re
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import sympy as sp

from . import symbols as S
from .cli_output import emit
from .latex_format import ABBREVIATIONS as _ABBREVIATIONS
from .latex_format import abbreviate, equation_lines, tex  # noqa: F401  (re-exported)

DOCUMENT_NAME = "qkov_dynamics.tex"
SNIPPET_DIR = "snippets"

# Names for left-hand sides and prose (SymPy objects; printed by sympy.latex).
H, X, Y, F, W = S.H, S.X, S.Y, S.F, S.W
LOSS = S.LOSS
ALPHA_0 = S.ALPHA_0
ETA_EFF = S.ETA_EFF
#: LaTeX of the relations of :class:`derivations.catalog.Result`.
RELATION_TEX = {"=": "=", "~": r"\sim"}


def snippet_filename(name: str) -> str:
    """File name of a result's snippet: ``<name>.tex`` with ``/`` -> ``_``."""
    return name.replace("/", "_") + ".tex"


@lru_cache(maxsize=None)
def _records():
    from .catalog import records
    return records()


def _results():
    return {name: rec.expr for name, rec in _records().items()}


def left_side(name: str):
    """The left-hand side of a result and its relation in LaTeX (``"="`` or
    ``"\\sim"``), from the catalog record; None for a result that is itself an
    equation."""
    rec = _records()[name]
    return None if rec.lhs is None else (rec.lhs, RELATION_TEX[rec.relation])


def snippet(name: str) -> str:
    """The equation environment of one result (see the module docstring)."""
    lhs = left_side(name)
    lhs, relation = (None, "=") if lhs is None else lhs
    return "\n".join(equation_lines(f"eq:{name}", _results()[name], lhs, relation)) + "\n"


# --------------------------------------------------------------------------
# The document. Prose may refer to symbols as <<name>> (a key of _INLINE,
# printed by sympy.latex) and to results as [[result name]] (-> \eqref).
def _d(f, x=S.t):
    return sp.Derivative(f, x)


def _inline():
    res = _results()
    d = {str(x): x for e in res.values() for x in e.free_symbols}
    d.update({str(x): x for x in S.SYMBOLS.values()})
    d.update({"H": H, "X": X, "Y": Y, "F": F, "W": W, "zeta": _ABBREVIATIONS[0],
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


def check_output_dir(output) -> Path:
    """Validate an output directory before any work: ``output`` must be a
    non-empty path, not a file, not below a file, not too long, and writable
    (probed with a temporary file in the nearest existing directory). Returns
    it as a Path; raises ValueError with a one-line reason."""
    text = str(output)
    if not text.strip():
        raise ValueError("--output must name a directory; got an empty path")
    path = Path(text)
    try:
        name_max = os.pathconf("/", "PC_NAME_MAX")
        path_max = os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError):  # pragma: no cover - platforms without pathconf
        name_max, path_max = 255, 4096
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if longest + len(os.fsencode(SNIPPET_DIR)) > name_max or \
            len(os.fsencode(str(path.absolute()))) + len(SNIPPET_DIR) + 100 > path_max:
        raise ValueError(f"--output path is too long: {text[:60]}...")
    if path.exists() and not path.is_dir():
        raise ValueError(f"--output {text} is a file, not a directory")
    if (path / SNIPPET_DIR).exists() and not (path / SNIPPET_DIR).is_dir():
        raise ValueError(f"--output {text}: {path / SNIPPET_DIR} is a file, not a directory")
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ValueError(f"--output {text} is below a file ({existing})")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".qkov-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"--output {text} is not writable ({existing}: {exc.strerror or exc})") from None
    return path


def write(output: Path) -> list[Path]:
    """Write the document and all snippets below ``output`` (each file
    atomically); returns the paths. The whole text is built before the first
    file is written."""
    from .atomic_file import atomic_write_text
    output = check_output_dir(output)
    files = {output / DOCUMENT_NAME: document()}
    for name in sorted(_results()):
        files[output / SNIPPET_DIR / snippet_filename(name)] = snippet(name)
    for path, text in files.items():
        atomic_write_text(path, text)
    return list(files)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump
        raise ValueError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser of ``python -m derivations.latex``."""
    parser = _Parser(prog="python -m derivations.latex",
                     description="Write the derived results as a standalone LaTeX document "
                                 "and one snippet per result.")
    parser.add_argument("--output", required=True,
                        help="output directory (created if missing): receives qkov_dynamics.tex "
                             "and snippets/<name>.tex")
    return parser


def main(argv=None) -> int:
    """Run the CLI; bad input or an unusable output directory: one line on
    stderr, exit status 2, nothing written."""
    try:
        args = build_parser().parse_args(argv)
        output = check_output_dir(args.output)
    except ValueError as exc:
        print(f"latex: error: {exc}", file=sys.stderr)
        return 2
    try:
        paths = write(output)
    except OSError as exc:
        print(f"latex: error: cannot write {exc.filename or args.output}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    return emit(f"wrote {paths[0]} and {len(paths) - 1} snippets in {output / SNIPPET_DIR}", "latex")


if __name__ == "__main__":
    sys.exit(main())
