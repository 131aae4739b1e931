r"""The one renderer of ``python -m derivations.print_dynamics``, for every task.

:func:`render` turns parsed command-line arguments into the printed text. The
paper's task (``--task paper``, the default) prints the catalog of
:func:`derivations.catalog.results` (model, factorization, the reduced ODEs,
first integrals and orbits of the four parameterizations, sharpness,
asymptotics); every other task prints, per parameterization, what
:mod:`derivations.engine` derived (read from the cache of
:mod:`derivations.task_catalog`): the family found by symmetry, observables,
attention and loss, the metric, the reduced ODEs (or the family flow where the
system does not close in the observables), conserved quantities, the mapping to
the paper's equations and the first integral, or why there is none.

The parsing (``--params`` for any task, the rates, ``--loss``) and the layout
of the human-readable formats are shared by all tasks. Numbers at a loss are
not computed here: this module is symbolic and never imports :mod:`numerics`.
The command-line entry :mod:`derivations.print_dynamics` hands :func:`render`
an ``answer`` function that does (lazily).

>>> from derivations.output.dynamics import parse_params
>>> from derivations.tasks import get_task
>>> parse_params("n_c=5,m=3", get_task("shared-irrelevant"))
{'n_c': 5, 'm': 3.0}
"""
from __future__ import annotations

import json

from ..core.cli import (OneLineParser, UsageError, option_named, parse_float, parse_loss, rate_values,
                        parse_params as _text_params)
from ..core.output import shown_float
from .formats import PRINTED_FORMATS, OneLine, format_expression
from ..core.vocabulary import (MODEL_PARAMETER_MEANINGS, PAPER_SETTING, PARAMETERIZATIONS, SHARES,
                               check_classes, check_positive)

__all__ = ["SYMBOL_MEANINGS", "build_parser", "parse_params", "task_list", "render",
           "paper_sections", "task_sections", "exact_number"]

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


def build_parser():
    """The command-line parser (also rendered in the docs by sphinx-argparse)."""
    parser = OneLineParser(prog="python -m derivations.print_dynamics", name="print_dynamics",
                           description="Print the derived QK/OV gradient-flow dynamics.")
    parser.add_argument("--parameterization", default="all", choices=[*PARAMETERIZATIONS, "all"],
                        help="which parameterization's reduced ODEs, first integral and orbit to print "
                             "(default: all)")
    parser.add_argument("--format", default="pretty", choices=["pretty", "text", "latex", "json"],
                        help="pretty (2-D Unicode), text (one line per result), latex, or json "
                             "(default: pretty)")
    parser.add_argument("--params", default=None,
                        help="substitute model parameters, e.g. m=5,n=50,b=50,M=20 (any subset, "
                             "each name once; m, n, b finite > 0; M an integer in [2, 2**53])")
    parser.add_argument("--ratio", type=str, default=None,
                        help="learning-rate ratio eta_QK/eta_OV with eta_OV = 1 (factor rates equal "
                             "their circuit's rate)")
    parser.add_argument("--eta-qk", type=str, default=None, help="the QK learning rate eta_QK (> 0)")
    parser.add_argument("--eta-ov", type=str, default=None, help="the OV learning rate eta_OV (> 0)")
    parser.add_argument("--loss", type=str, default=None,
                        help="also print the CACO state (mu_OV, mu_QK, alpha) at this loss, from zero "
                             "initialization; unset parameters take the paper's values and the ratio "
                             "defaults to 1 (computed by numerics.dynamics.closed_form); the state depends on the "
                             "ratio only, a task's integrated time t is at the rates given")
    parser.add_argument("--task", default="paper",
                        help="a built-in task of derivations.tasks ('list' lists them, as JSON with --format "
                             "json; it takes no other option) or the path of a task "
                             "file (.toml); --params then also takes the task's own parameters such as "
                             "n_c (default: paper)")
    return parser


# ----------------------------------------------------------------- input

def _model_value(name, text):
    """A model parameter by the vocabulary's rule, its message showing the text typed (1e400, not inf)."""
    value = parse_float(name, text)
    try:
        return check_classes(value) if name == "M" else check_positive(name, value)
    except ValueError as exc:     # m, n, b finite > 0; M an integer in [2, 2**53]
        raise UsageError(f"{str(exc).rpartition('; got ')[0]}; got {text!r}") from None


def parse_params(text: str, task=None) -> dict:
    """``--params`` text for ``task`` (default: the paper's) as ``{name: number}`` in the order given.

    The names are those the task uses (:func:`derivations.engine.check_parameter_names`, the rule of the
    experiments' ``--params``; the authors' task, with fixed numbers, takes none). Each name at most once
    (:func:`derivations.core.cli.parse_params`); m, n, b, M by the vocabulary's rule
    (:func:`derivations.core.vocabulary.check_positive`, :func:`~derivations.core.vocabulary.check_classes`),
    and every value, the task's own parameters included, by :func:`derivations.engine.validate_parameter`.
    Raises :class:`~derivations.core.cli.UsageError` (one line) otherwise.

    Parameters
    ----------
    text : str
        Comma-separated ``name=value`` pairs (the ``--params`` option).
    task : Task, optional
        The task the names belong to. Default None (the paper's task).

    Returns
    -------
    dict[str, int or float]

    Raises
    ------
    derivations.core.cli.UsageError
        An unknown or repeated name, or a value outside its range.
    """
    from ..engine import check_parameter_names
    from ..tasks import get_task
    task = get_task("paper") if task is None else task
    given, out = _text_params(text), {}
    try:     # the names the task uses, as the experiments' --params
        check_parameter_names(task, given)
    except ValueError as exc:
        raise UsageError(f"--params: {exc}") from None
    for name, value in given.items():
        try:
            number = _model_value(name, value) if name in PAPER_SETTING else None
            checked = task.validate(name, value)
        except (UsageError, ValueError) as exc:
            raise UsageError(option_named(exc, {name: "--params"})) from None
        exact = checked.is_Integer and abs(checked) < 2**53    # else printed as the float it is (1e23)
        out[name] = number if number is not None else (int(checked) if exact else float(checked))
    return out


def exact_number(value):
    """A number as a SymPy number: an Integer when it is a whole number below
    2**53 (printed as typed), else a Float (1e23 stays 1.0e+23, not 99999999999999991611392).

    Parameters
    ----------
    value : int or float

    Returns
    -------
    sympy.Integer or sympy.Float
    """
    import sympy as sp
    if value == int(value) and abs(value) < 2**53:
        return sp.Integer(int(value))
    return sp.Float(value)


def _substitutions(params, rates, task) -> dict:
    from ..symbolic.symbols import SYMBOLS
    table = {**SYMBOLS, **task.symbols()}
    return {table[k]: exact_number(v) for k, v in {**params, **rates}.items()}


def task_list(fmt: str = "text") -> str:
    """The built-in tasks: name, parameters, description.

    Parameters
    ----------
    fmt : {"text", "pretty", "latex", "json"}, optional
        ``"json"``: a JSON list of ``{"name", "parameters", "description"}``;
        the printed formats: one line per task (default).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        Another ``fmt``.
    """
    from ..tasks import TASKS
    if not isinstance(fmt, str) or fmt not in (*PRINTED_FORMATS, "json"):
        raise ValueError(f"fmt must be one of {', '.join(PRINTED_FORMATS)}, json; got {fmt!r}")
    if fmt == "json":
        return json.dumps([{"name": name, "parameters": list(task.parameters), "description": task.description}
                           for name, task in TASKS.items()], indent=2)
    lines = []
    for name, task in TASKS.items():
        params = f" (parameters: {', '.join(task.parameters)})" if task.parameters else ""
        lines.append(f"{name}{params}: {task.description}")
    return "\n".join(lines)


#: The options ``--task list`` has no use for, by their ``dest``.
_NOT_FOR_LIST = ("parameterization", "params", "ratio", "eta_qk", "eta_ov", "loss")


def _check_list_options(args) -> None:
    """Refuse an option ``--task list`` would ignore (every option but ``--format``)."""
    defaults = build_parser().parse_args([])
    given = [dest for dest in _NOT_FOR_LIST if getattr(args, dest) != getattr(defaults, dest)]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise UsageError(f"{flag}: --task list takes only --format (it lists the tasks)")


# ----------------------------------------------------------------- sections

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


def _reduction_items(red, g) -> list:
    import sympy as sp
    items = [("family (found by symmetry)", ", ".join(f"{c.symbol} (orbit {c.orbit})" for c in red.coordinates))]
    items += [(f"observable {k}", g(v)) for k, v in red.observables.items()]
    items += [(f"attention on {grp}", g(v)) for grp, v in red.attention.items()]
    items += [("alpha (relevant attention)", g(red.alpha)), ("L", g(red.loss))]
    if red.metric is not None:
        items.append(("metric G (d obs/dt = -G grad L)", g(red.metric)))
    if red.odes is not None:
        items += [(f"d{k}/dt", g(v)) for k, v in (red.odes_alpha or red.odes).items()]
    else:   # family flows: long, printed on one line even in the pretty format (2-D layout is unreadable and slow)
        items += [(f"d{k}/dt", OneLine(g(v))) for k, v in red.family_odes.items()]
    items += [(f"conserved quantity C_{i + 1} (dC/dt = 0 checked)", g(C)) for i, C in enumerate(red.conserved)]
    if red.mapping:
        items.append(("mapping to the paper's reduced ODEs", ", ".join(f"{k} -> {g(v)}" for k, v in red.mapping.items())))
    if red.first_integral is not None:
        items.append(("first integral H", g(red.first_integral)))
    if red.orbit is not None:
        items.append(("orbit mu_QK(mu_OV)" if not isinstance(red.orbit, sp.Equality) else "orbit (implicit)",
                      g(red.orbit)))
    items.append(("note", red.note))
    return items


def task_sections(task, names, subs) -> list:
    """``[(title, [(label, expr or str)])]`` for one engine task (a name, a task file or a
    :class:`~derivations.engine.task.Task`) and the parameterizations ``names``.

    Parameters
    ----------
    task : str, path or Task
        A built-in task's name, a task file's path, or a task.
    names : sequence of str
        Parameterizations, each one of "CACO", "CAFO", "FACO", "FAFO".
    subs : dict
        Symbol -> number substituted in the expressions (empty or None: none).

    Returns
    -------
    list of (str, list of (str, sympy.Expr or str))
    """
    from ..task_catalog import task_reduction

    def g(e):
        return e.subs(subs) if subs else e
    out = []
    for p in names:
        red = task_reduction(task, p)
        how = "in alpha = " + str(red.alpha) if red.odes_alpha else "in the observables"
        title = f"{red.task}, {p}: reduced dynamics ({how if red.odes is not None else 'family flow'})"
        out.append((title, _reduction_items(red, g)))
    return out


def _section_lines(sections, fmt) -> list:
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


# ----------------------------------------------------------------- payloads (json)

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


def _reduction_entry(red, js) -> dict:
    def table(d):
        return None if d is None else {str(k): js(v) for k, v in d.items()}
    return {"coordinates": [str(c.symbol) for c in red.coordinates],
            "observables": table(red.observables),
            "alpha": js(red.alpha), "loss": js(red.loss),
            "odes": table(red.odes), "family_odes": table(red.family_odes), "mapping": table(red.mapping),
            "first_integral": None if red.first_integral is None else js(red.first_integral),
            "orbit": None if red.orbit is None else js(red.orbit),
            "note": red.note}


def _task_payload(task, names, js, why) -> dict:
    from ..task_catalog import task_reduction
    payload = {"task": task.name, "description": task.description, "parameters": list(task.parameters)}
    if why is None:
        payload["parameterizations"] = {p: _reduction_entry(task_reduction(task, p), js) for p in names}
    else:
        payload["symbolic"] = f"not supported: {why}"
    return payload


# ----------------------------------------------------------------- the renderer

class _Expressions:
    """``name -> expression`` of the catalog's records (a read-only view)."""

    def __init__(self, records):
        self.records = records

    def __getitem__(self, name):
        return self.records[name].expr


def _paper_results(fmt: str, subs: dict):
    """The paper's results by name for the format ``fmt``: the texts of :data:`PRINTED`
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
    lines += _section_lines(paper_sections(res, names, subs), fmt)
    if state is not None:
        setting = {**PAPER_SETTING, **state["params"]}
        m, n, b = (shown_float(setting[k]) for k in "mnb")      # the numbers given, as typed (1e-320)
        lines += ["", f"== State at loss L = {shown_float(state['given_loss'])} (CACO, zero init, eta_QK/eta_OV = "
                  f"{shown_float(state['ratio'])}, m={m}, n={n}, b={b}, M={setting['M']}) ==", ""]
        lines += [f"{k} = {state[k]:.15g}" for k in ("mu_OV", "mu_QK", "alpha", *_SHARES_AND_LAMBDA) if k in state]
    return lines


def _task_text(task, names, subs, state, fmt, why) -> list:
    lines = [f"qkov: task {task.name!r}: gradient-flow dynamics derived by the task engine", task.description]
    if subs:
        lines.append("substituted: " + ", ".join(f"{k} = {v}" for k, v in subs.items()))
    if why is None:
        lines += _section_lines(task_sections(task, names, subs), fmt)
    else:
        lines += ["", f"symbolic reduction: not supported ({why}); the NumPy full-matrix model of "
                      "numerics.model integrates it"]
    if state is not None:
        rate = f", eta_OV = {shown_float(state['eta_OV'])}" if "eta_OV" in state else ""
        lines += ["", f"== state_at_loss: L = {shown_float(state['given_loss'])} (CACO, zero init, eta_QK/eta_OV = "
                      f"{shown_float(state['ratio'])}{rate}) ==", "", f"method: {state['method']}"]
        lines += [f"{k} = {v:.15g}" for k, v in state.items()
                  if isinstance(v, float) and k not in ("ratio", "loss", "eta_OV", "given_loss")]
    return lines


def _json(task, names, subs, state, why) -> str:
    def js(e):
        return str(e.subs(subs) if subs else e)
    if task.name == "paper":
        payload = _paper_payload(_paper_results("json", subs), names, js)
        if state is not None:
            payload["state_at_loss"] = {k: state[k] for k in ("mu_OV", "mu_QK", "alpha", *_SHARES_AND_LAMBDA, "loss")
                                        if k in state}
    else:
        payload = _task_payload(task, names, js, why)
        if state is not None:
            payload["state_at_loss"] = {k: v for k, v in state.items() if k not in ("params", "given_loss")}
    return json.dumps(payload, indent=2)


def _state(task, args, params, rates, why, answer):
    """The state at ``--loss`` (None without it), from ``answer``; ``ratio``, ``params`` and ``given_loss`` added."""
    if args.loss is None:
        return None
    M_value = int(task.classes) if task.classes.is_Integer else params.get("M", dict(task.defaults)["M"])
    loss = parse_loss(args.loss, M_value)
    if why is not None:
        raise UsageError(f"--loss: task {task.name!r} has no reduced ODE (numeric only: {why}); "
                         "run its full-matrix model in numerics instead")
    if answer is None:
        raise UsageError("--loss needs a numeric answer: run python -m derivations.print_dynamics")
    ratio = rates.get("eta_QK", 1.0) / (eta_OV := rates.get("eta_OV", 1.0))
    try:       # a value outside the method's range is named by the option that gave it
        state = dict(answer(task, loss, ratio, params, eta_OV))
    except UsageError as exc:
        rates_by = {"ratio": "--ratio" if args.ratio is not None else "--eta-qk, --eta-ov"}
        raise UsageError(option_named(exc, {**rates_by, **dict.fromkeys(params, "--params")})) from None
    state.update(ratio=ratio, params=params, given_loss=loss)
    if eta_OV != 1.0 and "t" in state:     # the time depends on eta_OV, the state on the ratio only
        state["eta_OV"] = eta_OV
    return state


def render(args, answer=None) -> str:
    """The whole output of ``print_dynamics`` for parsed arguments, any task.

    Parameters
    ----------
    args : argparse.Namespace
        From :func:`build_parser`.
    answer : callable, optional
        ``answer(task, loss, ratio, params, eta_OV)``: the state at ``--loss`` (``{"mu_OV", "mu_QK",
        "alpha", "loss", ..., "method"}``, the time ``t`` at the rates ``eta_QK = ratio * eta_OV`` and
        ``eta_OV``); the command-line entry :mod:`derivations.print_dynamics` supplies the numeric one.

    Returns
    -------
    str

    Raises
    ------
    UsageError, ValueError
        Bad input (the message names it).
    """
    if args.task == "list":
        _check_list_options(args)
        return task_list(args.format)
    from ..tasks import get_task
    task = get_task(args.task)
    params = {} if args.params is None else parse_params(args.params, task)
    rates = rate_values(args)
    why = task.why_not_symbolic()
    state = _state(task, args, params, rates, why, answer)
    names = PARAMETERIZATIONS if args.parameterization == "all" else (args.parameterization,)
    subs = _substitutions(params, rates, task)
    if args.format == "json":
        return _json(task, names, subs, state, why)
    if task.name == "paper":
        return "\n".join(_paper_text(_paper_results(args.format, subs), names, subs, state, args.format))
    return "\n".join(_task_text(task, names, subs, state, args.format, why))
