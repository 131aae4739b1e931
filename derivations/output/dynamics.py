r"""The one renderer of ``python -m derivations.print_dynamics``, for every task.

:func:`render` turns parsed command-line arguments into the printed text. The
paper's task (``--task paper``, the default) prints the catalog of
:func:`derivations.catalog.results` (:func:`derivations.output.paper_dynamics.paper_output`;
without ``--params``, rates or ``--loss`` no task is built, and the texts of the printed-results
cache are printed as they are); every other task prints, per parameterization, what
:mod:`derivations.engine` derived (read from the cache of
:mod:`derivations.task_catalog`): the family found by symmetry, observables,
attention and loss, the metric, the reduced ODEs (or the family flow where the
system does not close in the observables), conserved quantities, the mapping to
the paper's equations and the first integral, or why there is none.

The parsing (``--params`` for any task, the rates, ``--loss``) and the layout of the
human-readable formats are shared by all tasks. Numbers at a loss are not computed here: this module is symbolic and never imports :mod:`numerics`.
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
from .formats import PRINTED_FORMATS, OneLine
from .paper_dynamics import paper_output, section_lines
from ..core.vocabulary import PAPER_SETTING, PARAMETERIZATIONS, check_classes, check_positive

__all__ = ["build_parser", "parse_params", "task_list", "render", "task_sections", "exact_number"]

#: The options that substitute numbers or ask for a state at a loss, by their ``dest``: without them the
#: paper's output is the printed-results cache's texts as they are.
_SUBSTITUTING = ("params", "ratio", "eta_qk", "eta_ov", "loss")


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
        return check_classes(value) if name == "M" else check_positive(name, value, normal=True)
    except ValueError as exc:     # m, n, b finite > 0; M an integer in [2, 2**53]
        raise UsageError(f"{str(exc).rpartition('; got ')[0]}; got {text!r}") from None


def parse_params(text: str, task=None) -> dict:
    """``--params`` text for ``task`` (default: the paper's) as ``{name: number}`` in the order given.

    The names are those the task uses (:func:`derivations.engine.check_parameter_names`, the rule of the
    experiments' ``--params``; the authors' task, with fixed numbers, takes none). Each name at most once
    (:func:`derivations.core.cli.parse_params`); m, n, b and a task's own real parameter normal doubles
    (:func:`derivations.core.vocabulary.check_positive`), M by :func:`~derivations.core.vocabulary.check_classes`,
    and every value by :func:`derivations.engine.validate_parameter`. Raises :class:`~derivations.core.cli.UsageError` (one line) otherwise.

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
            number = _model_value(name, value) if number is None and not checked.is_Integer else number  # normal
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


# ----------------------------------------------------------------- payloads (json)

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

def _task_text(task, names, subs, state, fmt, why) -> list:
    lines = [f"qkov: task {task.name!r}: gradient-flow dynamics derived by the task engine", task.description]
    if subs:
        lines.append("substituted: " + ", ".join(f"{k} = {v}" for k, v in subs.items()))
    if why is None:
        lines += section_lines(task_sections(task, names, subs), fmt)
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
    payload = _task_payload(task, names, lambda e: str(e.subs(subs) if subs else e), why)
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
    names = PARAMETERIZATIONS if args.parameterization == "all" else (args.parameterization,)
    if args.task == "paper" and all(getattr(args, dest) is None for dest in _SUBSTITUTING):
        return paper_output(names, {}, None, args.format)     # the printed texts as they are: no task built
    from ..tasks import get_task
    task = get_task(args.task)
    params = {} if args.params is None else parse_params(args.params, task)
    rates = rate_values(args)
    why = task.why_not_symbolic()
    state = _state(task, args, params, rates, why, answer)
    subs = _substitutions(params, rates, task)
    if task.name == "paper":
        return paper_output(names, subs, state, args.format)
    if args.format == "json":
        return _json(task, names, subs, state, why)
    return "\n".join(_task_text(task, names, subs, state, args.format, why))
