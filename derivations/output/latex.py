r"""The one LaTeX builder: the derived theory as a standalone document and per-result snippets.

``python -m derivations.latex --output DIR`` writes

* ``DIR/qkov_dynamics.tex``: a standalone article (packages amsmath, amssymb,
  amsthm only) presenting every result of :func:`derivations.catalog.results`
  as a numbered equation ``\label{eq:<name>}``, grouped in sections and amsthm
  ``proposition`` environments with a short explanation each
  (:mod:`derivations.output.latex_sections`), then a section per built-in
  task of the task engine;
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
  unambiguously (``\,`` -> ``\cdot``, see ``tests/derivations/output/test_latex.py``).
* Very long expressions are shown with abbreviations: a subexpression that
  occurs at least twice is replaced by :data:`~derivations.output.tex.ABBREVIATIONS` (``zeta``, ``xi``)
  and defined on a following line of the same equation (:func:`~derivations.output.tex.abbreviate`).
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

>>> from derivations.output.latex import snippet, tex
>>> print(snippet("CACO.dmu_OV_dt_alpha"), end="")
\begin{equation}
\label{eq:CACO.dmu_OV_dt_alpha}
\frac{d}{d t} \mu_{OV} =
\frac{\alpha\,\eta_{OV}}{b\,\left(M + e^{\alpha\,\mu_{OV}} - 1\right)}
\end{equation}
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import sympy as sp

from ..catalog import records, results
from ..symbolic import symbols as S
from ..core.cli import OneLineParser, UsageError, usage_error
from ..core.interrupt import exit_on_interrupt
from ..core.output import emit, first_directory, missing_directories, note, prepare_output_dir
from .tex import ABBREVIATIONS, declare_unicode, equation_lines, tex

__all__ = ["DOCUMENT_NAME", "SNIPPET_DIR", "RELATION_TEX",
           "snippet_filename", "left_side", "snippet", "prose", "document", "write", "build_parser", "main"]

DOCUMENT_NAME = "qkov_dynamics.tex"
SNIPPET_DIR = "snippets"
#: LaTeX of the relations of :class:`derivations.catalog.Result`.
RELATION_TEX = {"=": "=", "~": r"\sim"}


def snippet_filename(name: str) -> str:
    """File name of a result's snippet: ``<name>.tex`` with ``/`` -> ``_``.

    Parameters
    ----------
    name : str
        A result's name.

    Returns
    -------
    str
    """
    return name.replace("/", "_") + ".tex"


def left_side(name: str):
    """The left-hand side of a result and its relation in LaTeX (``"="`` or
    ``"\\sim"``), from the catalog record; None for a result that is itself an
    equation.

    Parameters
    ----------
    name : str
        A result's name in :func:`derivations.catalog.records`.

    Returns
    -------
    (sympy.Expr, str) or None
        The left-hand side and the LaTeX of the relation.

    Raises
    ------
    KeyError
        If no result has that name.
    """
    rec = records()[name]
    return None if rec.lhs is None else (rec.lhs, RELATION_TEX[rec.relation])


def snippet(name: str) -> str:
    """The equation environment of one result (see the module docstring).

    Parameters
    ----------
    name : str
        A result's name in :func:`derivations.catalog.records`.

    Returns
    -------
    str
        The LaTeX lines, ending in a newline.

    Raises
    ------
    ValueError
        If no result has that name (``python -m derivations.catalog`` lists them).
    """
    if not isinstance(name, str) or name not in records():
        raise ValueError(f"name must be a result's name in derivations.catalog.records() "
                         f"({len(records())} results; python -m derivations.catalog lists them); got {name!r}")
    lhs = left_side(name)
    lhs, relation = (None, "=") if lhs is None else lhs
    return "\n".join(equation_lines(f"eq:{name}", results()[name], lhs, relation)) + "\n"


# --------------------------------------------------------------------------
# Prose may refer to symbols as <<name>> (a key of _inline(), printed by
# sympy.latex) and to results as [[result name]] (-> \eqref).
def _d(f, x=S.t):
    return sp.Derivative(f, x)


def _inline():
    res = results()
    omega = sp.Function("omega")(sp.Symbol("z"))
    d = {str(x): x for e in res.values() for x in e.free_symbols}
    d.update({str(x): x for x in S.SYMBOLS.values()})
    d.update({"H": S.H, "X": S.X, "Y": S.Y, "F": S.F, "W": S.W, "zeta": ABBREVIATIONS[0],
              "alpha_0": S.ALPHA_0, "eta_eff_QK": S.ETA_EFF["QK"], "eta_eff_OV": S.ETA_EFF["OV"],
              "loss": S.LOSS, "alpha_def": sp.Eq(S.alpha, res["model.alpha"]),
              "dmu_OV": _d(S.mu_OV), "dmu_QK": _d(S.mu_QK), "dH": _d(S.H), "dW": _d(S.W),
              "C_zero": sp.Eq(S.C_QK, 0), "C_OV_zero": sp.Eq(S.C_OV, 0),
              "r_def": sp.Eq(S.r, S.eta_QK / S.eta_OV), "eta_OV_one": sp.Eq(S.eta_OV, 1),
              "s_def": sp.Eq(S.s, S.alpha * S.mu_OV), "p_def": sp.Eq(S.p, S.alpha / (1 - S.alpha)),
              "alpha_to_1": sp.Limit(S.alpha, S.mu_OV, sp.oo),
              "mu_to_oo": sp.Limit(S.mu_OV, S.t, sp.oo),
              "omega_z": omega, "omega_def": sp.Eq(omega + sp.log(omega), sp.Symbol("z")),
              "mu_QK_zero": sp.Eq(S.mu_QK, 0), "origin": sp.Tuple(S.mu_OV_0, S.mu_QK_0),
              "origin_zero": sp.Eq(sp.Tuple(S.mu_OV_0, S.mu_QK_0), sp.Tuple(0, 0)),
              "dF_dp": _d(S.F, S.p), "dF_dr": _d(S.F, S.r), "dp_dr": _d(S.p, S.r),
              "Ei": sp.Ei(S.mu_QK), "XY": sp.Tuple(S.X, S.Y)})
    return d


def prose(text: str) -> str:
    """``text`` with ``<<symbol>>`` as inline math and ``[[result]]`` as ``\\eqref``.

    Parameters
    ----------
    text : str
        LaTeX prose with ``<<symbol>>`` and ``[[result]]`` markers.

    Returns
    -------
    str

    Raises
    ------
    KeyError
        If a ``<<symbol>>`` names no known symbol.
    """
    inline = _inline()
    text = re.sub(r"<<(\w+)>>", lambda mt: "$" + tex(inline[mt.group(1)]) + "$", text)
    return re.sub(r"\[\[([^\]]+)\]\]", lambda mt: r"\eqref{eq:%s}" % mt.group(1), text)


_PREAMBLE = (r"\documentclass[10pt]{article}",
             r"\usepackage{amsmath}", r"\usepackage{amssymb}", r"\usepackage{amsthm}",
             r"\setlength{\textwidth}{17.5cm}", r"\setlength{\oddsidemargin}{-0.6cm}",
             r"\setlength{\evensidemargin}{-0.6cm}", r"\setlength{\textheight}{23cm}",
             r"\setlength{\topmargin}{-1.5cm}",
             r"\newtheorem{proposition}{Proposition}",
             r"\allowdisplaybreaks",
             r"\title{Query-key / output-value learning dynamics:\\ derived results}",
             r"\author{Generated by \texttt{python -m derivations.latex}}",
             r"\date{}",
             r"\begin{document}", r"\maketitle", "")
_INTRODUCTION = ("This document is generated from the SymPy derivations of the package "
                 r"\texttt{qkov} (\texttt{derivations.catalog}); every formula is printed by "
                 r"\texttt{sympy.latex} from the derived expression. It follows ``Faster Query-Key "
                 r"Learning Sharpens Attention in Self-Attention Models'' (Vashisht and Ramaswamy, ICML 2026). "
                 "Long expressions use an abbreviation <<zeta>> (and a second one) for a repeated "
                 "subexpression, defined in the same display.")


def _section_lines(title, intro, blocks) -> list:
    from .latex_sections import SECTION_LABELS
    label = SECTION_LABELS.get(title)
    out = [r"\section{%s}" % title + (r"\label{%s}" % label if label else ""), prose(intro), ""]
    for _, ptitle, plabel, text, names in blocks:
        out.append(r"\begin{proposition}[%s]\label{%s}" % (ptitle, plabel))
        if text:
            out.append(prose(text))
        out += [snippet(name).rstrip("\n") for name in names]
        out += [r"\end{proposition}", ""]
    return out


def document(tasks=()) -> str:
    """The standalone document as a string; ``tasks`` (Task objects) get a section each
    after the built-in tasks'.

    Parameters
    ----------
    tasks : sequence of Task, optional
        Tasks besides the built-in ones. Default none.

    Returns
    -------
    str
    """
    from .latex_sections import paper_sections, task_sections
    out = [*_PREAMBLE, prose(_INTRODUCTION), ""]
    for title, intro, blocks in paper_sections():
        out += _section_lines(title, intro, blocks)
    from .latex_attention import attention_section
    out += attention_section()   # where attention goes (query-copies' master flow)
    out += task_sections(tasks)    # a section per built-in task and per task given (task engine)
    out.append(r"\end{document}")
    return declare_unicode("\n".join(out) + "\n")      # a task's names and description may hold any letter


def _prepare(output):
    """The output directory, created with its ``snippets`` folder and probed before any work
    (:func:`derivations.core.output.prepare_output_dir`), and the directories this created (deepest
    first); ValueError naming --output otherwise, or naming output when it is not a path."""
    if not isinstance(output, (str, os.PathLike)) or isinstance(os.fspath(output), bytes):
        raise ValueError(f"output must be a directory path (str or path-like); got {output!r}")
    created = missing_directories(Path(str(output)) / SNIPPET_DIR)
    prepare_output_dir(Path(str(output)) / SNIPPET_DIR if str(output).strip() else output)
    return Path(str(output)), created


def _refuse_directories(output, paths) -> None:
    """ValueError naming --output where a directory is in the place of a file to write (the atomic write
    could not replace it), before the first file is written."""
    in_the_way = first_directory(paths)
    if in_the_way is not None:
        raise ValueError(f"--output {str(output)!r} has a {in_the_way.relative_to(output)} that is a directory, "
                         "where latex writes that file; move it away or choose another directory")


def write(output, tasks=()) -> list[Path]:
    """Write the document and all snippets below ``output``, each file atomically.

    The directory is checked first and the whole text is built before the
    first file is written; when building fails (a task whose reduction fails or takes too long,
    Ctrl-C), the directories the check created are removed again.

    Parameters
    ----------
    output : str or path-like
        The output directory.
    tasks : sequence of str or Task, optional
        Tasks (names, files or :class:`~derivations.engine.Task` objects) whose sections
        the document adds.

    Returns
    -------
    list of pathlib.Path

    Raises
    ------
    ValueError
        ``output`` is not a path, or the directory cannot take the files (the message names
        ``--output``).
    """
    from ..core.atomic_file import atomic_write_text
    output, created = _prepare(output)
    try:
        files = {output / DOCUMENT_NAME: document(tasks)}
        for name in sorted(results()):
            files[output / SNIPPET_DIR / snippet_filename(name)] = snippet(name)
        _refuse_directories(output, files)
    except BaseException:          # a task that cannot be derived, Ctrl-C, a file in the way: leave nothing behind
        for directory in created:
            try:
                directory.rmdir()
            except OSError:
                pass
        raise
    for path, text in files.items():
        atomic_write_text(path, text)
    return list(files)


def build_parser() -> OneLineParser:
    """The command-line parser of ``python -m derivations.latex``."""
    parser = OneLineParser(prog="python -m derivations.latex", name="latex",
                           description="Write the derived results as a standalone LaTeX document "
                                       "and one snippet per result.")
    parser.add_argument("--output", required=True,
                        help="output directory (created if missing): receives qkov_dynamics.tex "
                             "and snippets/<name>.tex")
    parser.add_argument("--task", action="append", default=[],
                        help="also a section for this task: a built-in name or the path of a task file "
                             "(.toml); may be given several times")
    return parser


@exit_on_interrupt("latex")
def main(argv=None) -> int:
    """Run the CLI; bad input or an unusable output directory: one line on
    stderr, exit status 2, nothing written (checked before any work); Ctrl-C or SIGTERM: one line, 130 or 143.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 written, 1 a write failed, 2 bad input, 130 Ctrl-C, 143 SIGTERM.
    """
    try:
        args = build_parser().parse_args(argv)
        from ..tasks import get_task
        from .latex_sections import section_tasks
        tasks = [get_task(t) for t in args.task]     # a bad task file: one line, before any work
        section_tasks(tasks)                          # two tasks of one section label: likewise
        paths = write(args.output, tasks)
    except (UsageError, ValueError) as exc:
        return usage_error("latex", exc)
    except OSError as exc:
        note(f"latex: error: cannot write {exc.filename2 or exc.filename or args.output}: {exc.strerror or exc}")
        return 1
    return emit(f"wrote {paths[0]} and {len(paths) - 1} snippets in {paths[0].parent / SNIPPET_DIR}", "latex")
