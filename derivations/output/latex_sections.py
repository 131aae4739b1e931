r"""The content of the LaTeX document: the paper's sections and one per built-in task.

:func:`paper_sections` returns the paper's sections as data, ``[(title, intro,
[block, ...]), ...]`` with blocks ``("prop", title, label, text, [names])``;
prose refers to symbols as ``<<name>>`` and to results as ``[[result name]]``
(turned into LaTeX by :func:`derivations.output.latex.prose`). Every result of
:func:`derivations.catalog.results` appears in exactly one block (results added
later land in "Further results").

:func:`task_sections` returns the LaTeX lines of a ``\section`` per built-in
task: its description, and per parameterization the family found by symmetry,
the observables, the reduced ODEs (or why the system does not close in them),
the mapping to the paper's equations and the first integral or the reason there
is none; labels are ``eq:task.<task>.<P>.<what>``.

>>> from derivations.output.latex_sections import paper_sections
>>> [title for title, _, _ in paper_sections()][:2]
['The model', 'Reduced dynamics']
"""
from __future__ import annotations

from functools import partial

import sympy as sp

from ..catalog import results
from ..core.vocabulary import PARAMETERIZATIONS
from .tex import equation_lines, escape, tex

__all__ = ["SECTION_LABELS", "paper_sections", "section_tasks", "task_sections"]

_PARAM_TEXT = {
    "CACO": "collapsed query-key and collapsed output-value matrices",
    "CAFO": "collapsed query-key, factorized output-value circuit",
    "FACO": "factorized query-key, collapsed output-value circuit",
    "FAFO": "both circuits factorized",
}
#: ``\label`` of the sections that prose refers to.
SECTION_LABELS = {"Factorization rescales the learning rate": "sec:factorization"}


def _model():
    return ("The model", (
        "A single attention layer reads a context of <<m>> relevant and <<n>> irrelevant tokens "
        "(one-hot embeddings scaled by the embedding scale <<b>>) and predicts one of <<M>> classes. "
        "From the paper's initializations the gradient flow stays on an invariant family described by two "
        "scalars: the query-key score gap <<mu_QK>> and the output-value logit gap <<mu_OV>>."), [
        ("prop", "Attention and loss", "prop:model",
         "The total attention on the relevant tokens is [[model.alpha]], and the population "
         "cross-entropy loss is [[model.loss]]; as a function of the attention it is [[model.loss_alpha]].",
         ["model.alpha", "model.loss", "model.loss_alpha"]),
    ])


def _reduced():
    blocks = []
    for name in PARAMETERIZATIONS:
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
    return ("Reduced dynamics", (
        "Each of the four parameterizations (collapsed or factorized query-key and output-value circuits) "
        "reduces to an autonomous system for <<mu_OV>> and <<mu_QK>>. In all of them the "
        "output-value update is driven by the margin through the loss [[model.loss_alpha]], and the "
        "query-key update vanishes when the attention saturates."), blocks)


def _factorization():
    return ("Factorization rescales the learning rate", (
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
    ])


def _first_integrals(res):
    blocks = []
    for name in PARAMETERIZATIONS:
        implicit = isinstance(res[f"{name}.orbit"], sp.Equality)
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
    return ("First integrals: the parameters move along a line", (
        "Dividing the two reduced ODEs, the margin terms cancel and the orbit equation separates; "
        "integrating it gives a first integral <<H>>."), blocks)


def _sharpness():
    return ("Faster query-key learning sharpens attention", (
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
    ])


def _time_course():
    return ("Time course", (
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
    ])


def paper_sections() -> list:
    """``[(title, intro, [block, ...]), ...]``; a block is
    ``("prop", title, label, text, [names])`` or ``("text", text)``."""
    res = results()
    secs = [_model(), _reduced(), _factorization(), _first_integrals(res), _sharpness(), _time_course()]
    covered = {n for _, _, bl in secs for b in bl if b[0] == "prop" for n in b[4]}
    rest = [n for n in res if n not in covered]
    if rest:  # results added to the catalog after this text was written
        secs.append(("Further results", "Results without a dedicated explanation yet.",
                     [("prop", "Further results", "prop:further", "", rest)]))
    return secs



_engine_tex = partial(tex, engine=True)


def _equation(label, lhs, expr):
    return equation_lines(label, expr, lhs, "=", render=_engine_tex)


def _reduction_lines(name, p, red) -> list:
    """The LaTeX lines of one task's reduction ``red`` in parameterization ``p``."""
    from ..symbolic.symbols import t
    base = f"eq:task.{name}.{p}"
    out = [r"\subsection*{%s, %s}" % (escape(name), p)]
    coords = ", ".join("$" + _engine_tex(c.symbol) + "$" for c in red.coordinates)
    out.append(f"Family found by symmetry (orbit coordinates reached from the initialization): {coords}.")
    if red.odes is None:
        return out + [f"{escape(red.note)}.", ""]
    out.append("Observables (score gaps against the reference group "
               f"\\texttt{{{escape(red.reference)}}} and logit gaps):")
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
            f"${_engine_tex(k)} \\to {_engine_tex(v)}$" for k, v in red.mapping.items()) + ".")
    if red.first_integral is not None:
        out.append("First integral:")
        out += _equation(f"{base}.H", sp.Symbol("H"), red.first_integral)
        if red.orbit is not None and not isinstance(red.orbit, sp.Equality):
            out.append("Orbit through $(\\mu_{OV,0}, \\mu_{QK,0})$:")
            out += _equation(f"{base}.orbit", sp.Symbol("mu_QK"), red.orbit)
    return out + [escape(red.note) + ".", ""]


def _label_key(name) -> str:
    """The part of a task's section label (``sec:task.<key>``) made of its name."""
    import re

    return re.sub(r"[^A-Za-z0-9.+-]", "-", name)


def section_tasks(extra=()) -> list:
    """The tasks :func:`task_sections` gives a section: the built-in ones, then each task of ``extra`` not
    among them (a task given twice has one section).

    Parameters
    ----------
    extra : sequence of Task, optional
        Tasks besides the built-in ones. Default none.

    Returns
    -------
    list of Task

    Raises
    ------
    ValueError
        Two different tasks whose sections would have the same label (``sec:task.<name>``, the name with each
        character other than a letter, a digit or ``.+-`` as ``-``): LaTeX would define it twice.
    """
    from ..tasks import TASKS
    tasks, names = list(TASKS.values()), {}
    tasks += [t for i, t in enumerate(extra) if t not in tasks and t not in extra[:i]]
    for task in tasks:
        other = names.setdefault(_label_key(task.name), task)
        if other is not task:
            raise ValueError(f"--task: tasks {other.name!r} and {task.name!r} are different tasks whose sections would "
                             f"both be labelled sec:task.{_label_key(task.name)}: give them distinct names")
    return tasks


def task_sections(extra=()) -> list:
    """LaTeX lines: a ``\\section`` per built-in task and per task of ``extra`` (tasks, e.g.
    read from files; see the module docstring).

    Parameters
    ----------
    extra : sequence of Task, optional
        Tasks besides the built-in ones (:func:`section_tasks`: a task among them twice, or a built-in one, is
        not repeated). Default none.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        Two different tasks whose sections would have the same label (:func:`section_tasks`).
    """
    from ..task_catalog import task_reduction
    out = []
    for task in section_tasks(extra):
        name, key = task.name, _label_key(task.name)
        out += [r"\section{Task \texttt{%s}}\label{sec:task.%s}" % (escape(name), key), escape(task.description), ""]
        why = task.why_not_symbolic()
        if why is not None:
            out += [f"The symbolic engine does not reduce this task ({escape(why)}); its gradient flow is "
                    r"integrated on the full matrices by \texttt{numerics}.", ""]
            continue
        for p in PARAMETERIZATIONS:
            out += _reduction_lines(key, p, task_reduction(task, p))
    return out
