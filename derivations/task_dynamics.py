r"""``print_dynamics --task NAME``: the derived dynamics of a task other than the paper's.

:func:`render_task` is called by :mod:`derivations.print_dynamics` for every
task but ``paper`` (whose output stays the default one, byte for byte). It
prints, per parameterization, what :mod:`derivations.task_reduction` derived
(from the cache of :mod:`derivations.task_catalog`): the family found by
symmetry, the observables, attention and loss, the metric, the reduced ODEs
(or the family flow where the system does not close in the observables),
conserved quantities, the mapping to the paper's equations and the first
integral, or why there is none.

``--ratio R --loss L`` adds the state at that loss from zero initialization
(collapsed circuits, eta_OV = 1): in closed form where the task maps to the
paper (the paper's state equation at the mapped ratio), else by integrating
the reduced ODE (:func:`numerics.task_state.task_state_at_loss`, imported
only then).

>>> from derivations.task_dynamics import parse_task_params
>>> from derivations.task import get_task
>>> parse_task_params("n_c=5,m=3", get_task("shared-irrelevant"))
{'n_c': 5, 'm': 3}
"""
from __future__ import annotations

import json

STATE_KEYS = ("mu_OV", "mu_QK", "alpha", "loss")


class OneLine:
    """An expression that the pretty format prints as one line (``str``)."""

    def __init__(self, expr):
        self.expr = expr


class TaskUsageError(ValueError):
    """Bad input for a task (one line on stderr, exit 2)."""


def task_list() -> str:
    """One line per built-in task: name, parameters, description."""
    from .task import TASKS
    lines = []
    for name, task in TASKS.items():
        params = f" (parameters: {', '.join(task.parameters)})" if task.parameters else ""
        lines.append(f"{name}{params}: {task.description}")
    return "\n".join(lines)


def parse_task_params(text: str, task) -> dict:
    """``"n_c=5,m=3"`` -> ``{"n_c": 5, "m": 3}``, validated for ``task``
    (m, n, b > 0; M integer >= 2; the task's own parameters, e.g. n_c integer >= 1)."""
    from .cli import assignments
    from .task import validate_parameter
    allowed = ("m", "n", "b", "M", *task.parameters)
    out = {}
    for name, value in assignments(text, TaskUsageError):
        if name not in allowed:
            raise TaskUsageError(f"--params: task {task.name!r} has no parameter {name!r} "
                                 f"(valid: {', '.join(allowed)})")
        try:
            v = validate_parameter(name, value)
        except ValueError as exc:
            raise TaskUsageError(str(exc)) from None
        out[name] = int(v) if v.is_Integer else float(v)
    if task.classes.is_Integer and "M" in out and out["M"] != int(task.classes):
        raise TaskUsageError(f"task {task.name!r} has a fixed number of classes, M = {task.classes}")
    return out


def _subs_for(params, rates):
    import sympy as sp

    from .symbols import SYMBOLS
    from .task import TASK_PARAMETERS
    table = {**SYMBOLS, **TASK_PARAMETERS}
    out = {}
    for k, v in {**params, **rates}.items():
        out[table[k]] = sp.Integer(int(v)) if float(v) == int(v) else sp.Float(v)
    return out


def closed_form_ratio(task_name: str, ratio: float, params: dict):
    """For a task whose CACO flow maps to the paper's (eta_QK -> kappa_QK eta_QK,
    eta_OV -> kappa_OV eta_OV), the paper-equivalent ratio kappa_QK/kappa_OV * ratio;
    None when the task has no such mapping."""
    from .symbols import eta_OV, eta_QK
    from .task_catalog import task_reduction
    red = task_reduction(task_name, "CACO")
    if red.mapping is None:
        return None
    subs = _subs_for(params, {})
    k_qk = (red.mapping.get(eta_QK, eta_QK) / eta_QK).subs(subs)
    k_ov = (red.mapping.get(eta_OV, eta_OV) / eta_OV).subs(subs)
    return float(ratio * k_qk / k_ov)


def state_at_loss_task(task_name: str, loss: float, ratio: float, params: dict) -> dict:
    """The state at ``loss`` from zero initialization (CACO, eta_OV = 1, eta_QK = ratio).

    Returns ``{"mu_OV", "mu_QK", "alpha", "loss", ..., "method"}``: method
    ``"closed form (paper at mapped ratio R')"`` or ``"numerical integration"``."""
    from .task import get_task
    task = get_task(task_name)
    full = {**dict(task.defaults), **params}
    if task.classes.is_Integer:
        full["M"] = int(task.classes)
    mapped = None
    try:
        task.check_symbolic()
        mapped = closed_form_ratio(task_name, ratio, full)
    except ValueError:
        mapped = None
    if mapped is not None:
        from numerics.closed_form import state_at_loss   # the one root-find (lazy: numerics)
        st = state_at_loss(loss, mapped, m=full["m"], n=full["n"], b=full["b"], M=full["M"])
        state = {k: float(getattr(st, k)) for k in ("mu_OV", "mu_QK", "alpha", "loss")}
        state["method"] = f"closed form: the paper's state equation at the mapped ratio {mapped:.15g}"
        return state
    try:
        from numerics.task_state import task_state_at_loss
    except ImportError as exc:   # pragma: no cover - numerics ships with the package
        raise TaskUsageError(f"task {task_name!r} needs numerics.task_state for --loss ({exc})") from None
    raw = task_state_at_loss(task_name, ratio, loss, **{k: v for k, v in full.items()
                                                          if k != "M" or not task.classes.is_Integer})
    state = {k: float(v) for k, v in raw.get("coordinates", {}).items()}
    state.update(alpha=float(raw["alpha"]), loss=float(raw["loss"]))
    if "t" in raw:
        state["t"] = float(raw["t"])
    state["method"] = "numerical integration of the reduced ODE (numerics.task_state.task_state_at_loss)"
    return state


def task_sections(task_name: str, names, subs) -> list:
    """``[(title, [(label, expr or str)])]`` for one task and the parameterizations ``names``."""
    import sympy as sp

    from .task_catalog import task_reduction

    def g(e):
        return e.subs(subs) if subs else e
    out = []
    for p in names:
        red = task_reduction(task_name, p)
        items = [("family (found by symmetry)", ", ".join(f"{c.symbol} (orbit {c.orbit})" for c in red.coordinates))]
        items += [(f"observable {k}", g(v)) for k, v in red.observables.items()]
        items += [(f"attention on {grp}", g(v)) for grp, v in red.attention.items()]
        items.append(("alpha (relevant attention)", g(red.alpha)))
        items.append(("L", g(red.loss)))
        if red.metric is not None:
            items.append(("metric G (d obs/dt = -G grad L)", g(red.metric)))
        if red.odes is not None:
            for k, v in (red.odes_alpha or red.odes).items():
                items.append((f"d{k}/dt", g(v)))
        else:   # family flows: long, printed on one line even in the pretty format (2-D layout is unreadable and slow)
            for k, v in red.family_odes.items():
                items.append((f"d{k}/dt", OneLine(g(v))))
        for i, C in enumerate(red.conserved):
            items.append((f"conserved quantity C_{i + 1} (dC/dt = 0 checked)", g(C)))
        if red.mapping:
            items.append(("mapping to the paper's reduced ODEs", ", ".join(f"{k} -> {g(v)}" for k, v in red.mapping.items())))
        if red.first_integral is not None:
            items.append(("first integral H", g(red.first_integral)))
        if red.orbit is not None:
            items.append(("orbit mu_QK(mu_OV)" if not isinstance(red.orbit, sp.Equality) else "orbit (implicit)",
                          g(red.orbit)))
        items.append(("note", red.note))
        how = "in alpha = " + str(red.alpha) if red.odes_alpha else "in the observables"
        title = f"{task_name}, {p}: reduced dynamics ({how if red.odes is not None else 'family flow'})"
        out.append((title, items))
    return out


def render_task(args, task_name: str) -> str:
    """The output of ``print_dynamics --task task_name`` for parsed ``args``."""
    from .cli import _render, parse_loss, rate_values
    from .task import get_task
    task = get_task(task_name)
    params = parse_task_params(args.params, task)
    rates = rate_values(args)
    loss_value = None
    if args.loss is not None:
        M_value = int(task.classes) if task.classes.is_Integer else params.get("M", dict(task.defaults)["M"])
        loss_value = parse_loss(args.loss, M_value, TaskUsageError)
    symbolic = True
    try:
        task.check_symbolic()
    except ValueError as exc:
        symbolic, why = False, str(exc)
    if loss_value is not None and not symbolic:
        raise TaskUsageError(f"--loss: task {task_name!r} has no reduced ODE (numeric only: {why}); "
                             "run its full-matrix model in numerics instead")
    names = ("CACO", "CAFO", "FACO", "FAFO") if args.parameterization == "all" else (args.parameterization,)
    state = None
    if loss_value is not None:
        ratio = rates.get("eta_QK", 1.0) / rates.get("eta_OV", 1.0)
        state = state_at_loss_task(task_name, loss_value, ratio, params)
        state["ratio"] = ratio
    subs = _subs_for(params, rates)
    if args.format == "json":
        payload = {"task": task_name, "description": task.description, "parameters": list(task.parameters)}
        if symbolic:
            from .task_catalog import task_reduction
            payload["parameterizations"] = {}
            for p in names:
                red = task_reduction(task_name, p)

                def js(e):
                    return str(e.subs(subs) if subs else e)
                entry = {"coordinates": [str(c.symbol) for c in red.coordinates],
                         "observables": {str(k): js(v) for k, v in red.observables.items()},
                         "alpha": js(red.alpha), "loss": js(red.loss),
                         "odes": None if red.odes is None else {str(k): js(v) for k, v in red.odes.items()},
                         "family_odes": {str(k): js(v) for k, v in red.family_odes.items()},
                         "mapping": None if red.mapping is None else {str(k): js(v) for k, v in red.mapping.items()},
                         "first_integral": None if red.first_integral is None else js(red.first_integral),
                         "orbit": None if red.orbit is None else js(red.orbit),
                         "note": red.note}
                payload["parameterizations"][p] = entry
        else:
            payload["symbolic"] = f"not supported: {why}"
        if state is not None:
            payload["state_at_loss"] = {k: v for k, v in state.items()}
        return json.dumps(payload, indent=2)
    lines = [f"qkov: task {task_name!r}: gradient-flow dynamics derived by the task engine",
             task.description]
    if subs:
        lines.append("substituted: " + ", ".join(f"{k} = {v}" for k, v in subs.items()))
    if symbolic:
        for title, items in task_sections(task_name, names, subs):
            lines += ["", f"== {title} ==", ""]
            for label, expr in items:
                if isinstance(expr, OneLine):
                    expr = expr.expr if args.format == "latex" else str(expr.expr)
                text = expr if isinstance(expr, str) else _render(expr, args.format)
                if "\n" in text:
                    lines += [f"{label} =", text, ""]
                else:
                    lines.append(f"{label} = {text}")
    else:
        lines += ["", f"symbolic reduction: not supported ({why}); the NumPy full-matrix model of "
                      "numerics.task_model integrates it"]
    if state is not None:
        lines += ["", f"== state_at_loss: L = {state['loss']:g} (CACO, zero init, eta_QK/eta_OV = "
                      f"{state['ratio']:g}) ==", "", f"method: {state['method']}"]
        lines += [f"{k} = {v:.15g}" for k, v in state.items() if isinstance(v, float) and k not in ("ratio", "loss")]
    return "\n".join(lines)
