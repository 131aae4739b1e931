r"""The paper's part of ``python -m derivations.print_dynamics``: its sections and its JSON.

:func:`paper_output` prints what :func:`derivations.catalog.results` derived for the paper's task
(model, factorization, the reduced ODEs, first integrals and orbits of the four parameterizations,
sharpness, asymptotics) in each format. With nothing substituted the printed texts come from the
printed-results cache :data:`derivations.catalog.PRINTED` as they are: no expression is read or printed,
no task is built, and no SymPy is imported when that cache is fresh (one that is missing, stale or
damaged is derived again, with SymPy, by its store). With substitutions only the results printed are
decoded. :func:`section_lines` lays out the sections of every task's output
(:mod:`derivations.output.dynamics` prints the engine's tasks with it).

>>> from derivations.output.paper_dynamics import paper_output
>>> paper_output(["CACO"], {}, None, "text").splitlines()[3:6]
['== Model ==', '', 'alpha = m*exp(mu_QK)/(m*exp(mu_QK) + n)']
"""
from __future__ import annotations

import json

from ..core.output import shown_float
from ..core.vocabulary import MODEL_PARAMETER_MEANINGS, PAPER_SETTING, SHARES
from .formats import format_expression

__all__ = ["SYMBOL_MEANINGS", "paper_sections", "section_lines", "paper_output"]

SYMBOL_MEANINGS = {
    **MODEL_PARAMETER_MEANINGS,
    "eta_QK": "learning rate of the collapsed QK matrix", "eta_OV": "learning rate of the collapsed OV matrix",
    "eta_Q": "rate of W_Q", "eta_K": "rate of W_K", "eta_O": "rate of W_O", "eta_V": "rate of W_V",
    "mu_OV": "logit gap per unit relevant attention, (z_k - z_j)/alpha",
    "mu_QK": "score of a relevant token minus score of an irrelevant token",
    "mu_OV_0": "initial mu_OV", "mu_QK_0": "initial mu_QK",
}

#: The attention shares of a state at a loss and beside them Lambda = r (M - 1) l(L)^2 / (M b),
#: the master curve's coordinate.
_SHARES_AND_LAMBDA = (*SHARES, "master_lambda")


def _factorization_items(res, g):
    items = [("dW/dt", res["factorization.induced_flow"])]
    for c in ("QK", "OV"):
        items += [(f"{c}: conserved quantity C_{c}", res[f"factorization.{c}.conserved"]),
                  (f"{c}: effective rate (balanced)", g(f"factorization.{c}.effective_rate")),
                  (f"{c}: effective rate (unbalanced)", g(f"factorization.{c}.effective_rate_unbalanced"))]
    return items


def _sharpness_items(res, g):
    sign_names = ("dF/dp", "dF/dr", "dp/dr", "dalpha/dr", "dmu_QK/dr", "dmu_OV/dr")
    items = [("margin s = alpha mu_OV at loss L", g("sharpness.margin")),
             ("state equation F(p; s, r) = 0 (p = alpha/(1-alpha), r = eta_QK/eta_OV)",
              g("sharpness.state_equation"))]
    items += [(f"state: {k}", g(f"sharpness.state.{k}")) for k in ("alpha", "mu_QK", "mu_OV")]
    items += [(f"sign of {k}", res[f"sharpness.sign_value.{k}"]) for k in sign_names]
    return items


def paper_sections(res, names, subs) -> list:
    """``[(title, [(label, expr)])]`` of the paper's task for the parameterizations ``names``.

    Parameters
    ----------
    res : Mapping[str, sympy.Expr]
        The derived results by key (:func:`derivations.catalog.results`).
    names : sequence of str
        Parameterizations, each one of "CACO", "CAFO", "FACO", "FAFO".
    subs : dict
        Symbol -> number substituted in the expressions (empty or None: none).

    Returns
    -------
    list of (str, list of (str, sympy.Expr))
    """
    def g(key):
        e = res[key]
        return e.subs(subs) if subs else e
    out = [("Model", [("alpha", g("model.alpha")), ("L", g("model.loss_alpha"))]),
           ("Factorization: implicit learning-rate rescaling (W = A B)", _factorization_items(res, g))]
    for name in names:
        items = [("dmu_OV/dt", g(f"{name}.dmu_OV_dt_alpha")), ("dmu_QK/dt", g(f"{name}.dmu_QK_dt_alpha")),
                 ("first integral H", g(f"{name}.first_integral")), ("dH/dt", g(f"{name}.dH_dt")),
                 ("line: X(mu_OV)", g(f"{name}.line_X")), ("line: Y(mu_QK)", g(f"{name}.line_Y")),
                 ("line: slope", g(f"{name}.line_slope")), ("orbit mu_QK(mu_OV)", g(f"{name}.orbit"))]
        out.append((f"{name}: reduced ODEs (alpha = m e^mu_QK/(m e^mu_QK + n)), first integral, orbit", items))
    out.append(("Sharpness at fixed loss (CACO, zero initialization, eta_OV = 1)", _sharpness_items(res, g)))
    out.append(("Time course and asymptotics (CACO)", [
        ("early phase: alpha frozen at alpha_0", g("asymptotics.early.alpha_0")),
        ("early phase: t(mu_OV)", g("asymptotics.early.t_of_mu_OV_alpha")),
        ("early phase: mu_OV(t)", g("asymptotics.early.mu_OV_of_t_alpha")),
        ("late: 1 - alpha along the orbit", g("asymptotics.late.one_minus_alpha")),
        ("late: 1 - alpha ~", g("asymptotics.late.one_minus_alpha_leading")),
        ("late: loss ~", g("asymptotics.late.loss_leading"))]))
    return out


def section_lines(sections, fmt) -> list:
    """The lines of ``sections`` in the format ``fmt``: a title line, then ``label = text`` (a text of
    several lines below its label).

    Parameters
    ----------
    sections : list of (str, list of (str, object))
        ``[(title, [(label, item)])]``, each item an expression, a text or a
        :class:`~derivations.output.formats.OneLine`.
    fmt : {"pretty", "text", "latex"}
        The format (:func:`derivations.output.formats.format_expression`).

    Returns
    -------
    list of str
    """
    lines = []
    for title, items in sections:
        lines += ["", f"== {title} ==", ""]
        for label, expr in items:
            text = format_expression(expr, fmt)
            if "\n" in text:
                lines += [f"{label} =", text, ""]
            else:
                lines.append(f"{label} = {text}")
    return lines


def _paper_payload(res, names, js) -> dict:
    return {
        "symbols": SYMBOL_MEANINGS,
        "alpha": js(res["model.alpha"]),
        "loss": js(res["model.loss"]),
        "parameterizations": {name: {
            "dmu_OV_dt": js(res[f"{name}.dmu_OV_dt"]), "dmu_QK_dt": js(res[f"{name}.dmu_QK_dt"]),
            "first_integral": js(res[f"{name}.first_integral"]), "orbit": js(res[f"{name}.orbit"])}
            for name in names},
    }


class _Expressions:
    """``name -> expression`` of the catalog's records (a read-only view)."""

    def __init__(self, records):
        self.records = records

    def __getitem__(self, name):
        return self.records[name].expr


def _paper_results(fmt: str, subs: dict):
    """The paper's results by name for the format ``fmt``: the texts of :data:`derivations.catalog.PRINTED`
    when nothing is substituted, else the expressions of
    :func:`derivations.catalog.results`, each decoded when it is first printed
    (:meth:`~derivations.core.expression_cache.ExpressionStore.lazy`)."""
    from ..catalog import PRINTED, STORE
    if not subs:
        return PRINTED.load()["text" if fmt == "json" else fmt]
    return _Expressions(STORE.lazy())


def _paper_text(res, names, subs, state, fmt) -> list:
    lines = ["qkov: query-key / output-value gradient-flow dynamics, derived with SymPy",
             "(Vashisht & Ramaswamy, 'Faster Query-Key Learning Sharpens Attention in Self-Attention Models', ICML 2026)"]
    if subs:
        lines.append("substituted: " + ", ".join(f"{k} = {v}" for k, v in subs.items()))
    lines += section_lines(paper_sections(res, names, subs), fmt)
    if state is not None:
        setting = {**PAPER_SETTING, **state["params"]}
        m, n, b = (shown_float(setting[k]) for k in "mnb")      # the numbers given, as typed (1e-320)
        lines += ["", f"== State at loss L = {shown_float(state['given_loss'])} (CACO, zero init, eta_QK/eta_OV = "
                  f"{shown_float(state['ratio'])}, m={m}, n={n}, b={b}, M={setting['M']}) ==", ""]
        lines += [f"{k} = {state[k]:.15g}" for k in ("mu_OV", "mu_QK", "alpha", *_SHARES_AND_LAMBDA) if k in state]
    return lines


def paper_output(names, subs, state, fmt) -> str:
    """The output of ``print_dynamics`` for the paper's task.

    Parameters
    ----------
    names : sequence of str
        Parameterizations, each one of "CACO", "CAFO", "FACO", "FAFO".
    subs : dict
        Symbol -> number substituted in the expressions (empty: none, and the texts of the
        printed-results cache are printed as they are).
    state : dict or None
        The state at ``--loss`` (from :mod:`derivations.output.dynamics`), or None.
    fmt : {"pretty", "text", "latex", "json"}
        The format.

    Returns
    -------
    str
    """
    res = _paper_results(fmt, subs)
    if fmt != "json":
        return "\n".join(_paper_text(res, names, subs, state, fmt))
    payload = _paper_payload(res, names, lambda e: str(e.subs(subs) if subs else e))
    if state is not None:
        payload["state_at_loss"] = {k: state[k] for k in ("mu_OV", "mu_QK", "alpha", *_SHARES_AND_LAMBDA, "loss")
                                    if k in state}
    return json.dumps(payload, indent=2)
