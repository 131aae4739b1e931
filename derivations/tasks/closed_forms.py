r"""The paper's closed forms as capabilities of the tasks that have them.

The engine reduces every task (:func:`derivations.engine.reduce_task`); the
paper's model is its ``paper`` task. What the paper has *beyond* the reduced
ODEs -- closed forms derived for symbolic M in :mod:`derivations.tasks.paper`
-- is attached to the task as a **capability**, looked up by name:

=======================  ======================================================  =================
capability               what it returns (``{name: sympy expression}``)          parameterizations
=======================  ======================================================  =================
``published_equations``  the authors' published alpha, loss and CACO ODEs        CACO
``reduced_odes``         dmu_OV/dt, dmu_QK/dt (balanced factors), in alpha       all
``unbalanced_rates``     the ODEs and effective rates with ``C_QK``, ``C_OV``    CAFO, FACO, FAFO
``line_coordinates``     X(mu_OV), Y(mu_QK) and the slope of the line            all
``orbit``                the first integral H and the orbit (Wright omega,       all
                         or implicit with Ei)
``state_at_loss``        margin at a loss, the state equation F(p; s, r)         CACO
                         and the state in the attention odds p
``sharpness_signs``      signs of the r-derivatives of the state at a loss       CACO
``asymptotics``          the early phase and the late-time limits                CACO
=======================  ======================================================  =================

The paper has them natively. A task that the engine maps onto the paper's
equations (the ``mapping`` of a :class:`~derivations.engine.reduce.TaskReduction`, e.g.
``shared-irrelevant``: ``eta_QK -> eta_QK (n_c + 1)/n_c``) **inherits** them:
the paper's closed forms with the learning rates mapped (and the rate ratio
``r`` scaled by the same factors). A task without a capability says why:
:func:`capability` raises :class:`CapabilityUnavailable` (a ``ValueError``)
whose message gives the reason, as the engine's own "no first integral,
because ..." does; :func:`capabilities` lists every capability with ``None``
(available) or the reason.

The expressions come from the derivation cache (:func:`derivations.catalog.results`),
so a look-up is fast once the cache is fresh.

Examples
--------
>>> from derivations.tasks import capability, capabilities, CapabilityUnavailable
>>> capability("paper", "line_coordinates")["slope"]
eta_QK/eta_OV
>>> capability("shared-irrelevant", "line_coordinates")["slope"]
eta_QK*(n_c + 1)/(eta_OV*n_c)
>>> print(capabilities("paper", "CAFO")["state_at_loss"])
the state at a loss is derived for CACO from zero initialization only (the paper's sharpness result)
>>> try:
...     capability("query-in-context", "orbit")
... except CapabilityUnavailable as exc:
...     print(str(exc)[:98])
task 'query-in-context' (CACO) has no orbit: the engine does not map it onto the paper's equations
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.vocabulary import CIRCUITS, PARAMETERIZATIONS, check_parameterization

__all__ = ["CapabilityUnavailable", "Capability", "CAPABILITIES", "capability", "capabilities"]


class CapabilityUnavailable(ValueError):
    """The task does not have the capability asked for; the message says why."""


@dataclass(frozen=True)
class Capability:
    """One closed form of the paper.

    Attributes
    ----------
    name, description : str
    parameterizations : tuple[str, ...]
        Where the paper derives it.
    why_not : str
        Why it is missing in the other parameterizations.
    results : callable
        ``results(parameterization) -> {key: catalog result name}``: the
        expressions of :func:`derivations.catalog.results` it consists of.
    """
    name: str
    description: str
    parameterizations: tuple
    why_not: str
    results: object


def _per_parameterization(**names):
    return lambda P: {key: f"{P}.{name}" for key, name in names.items()}


def _fixed(**names):
    return lambda P: dict(names)


def _unbalanced(P):
    out = {"dmu_OV_dt": f"{P}.dmu_OV_dt_unbalanced_alpha", "dmu_QK_dt": f"{P}.dmu_QK_dt_unbalanced_alpha"}
    for name, circuit in CIRCUITS.items():
        if circuit.factorized(P):
            out[f"effective_rate_{name}"] = f"factorization.{name}.effective_rate_unbalanced"
            out[f"conserved_{name}"] = f"factorization.{name}.conserved"
    return out


_SIGNS = ("dF/dp", "dF/dr", "dp/dr", "dalpha/dr", "dmu_QK/dr", "dmu_OV/dr")
_EARLY = ("alpha_0", "t_of_mu_OV", "mu_OV_of_t", "loss_of_t")
_LATE = ("one_minus_alpha_leading", "loss_times_t_limit", "loss_leading")

#: The capabilities by name.
CAPABILITIES = {c.name: c for c in (
    Capability("published_equations", "the authors' published alpha, loss and CACO reduced ODEs", ("CACO",),
               "the authors published the collapsed (CACO) equations only", None),
    Capability("reduced_odes", "dmu_OV/dt and dmu_QK/dt, balanced factors, written in alpha",
               PARAMETERIZATIONS, "", _per_parameterization(dmu_OV_dt="dmu_OV_dt_alpha", dmu_QK_dt="dmu_QK_dt_alpha")),
    Capability("unbalanced_rates", "reduced ODEs and effective rates with the conserved C_QK, C_OV",
               ("CAFO", "FACO", "FAFO"), "collapsed circuits have no factors, hence no conserved C_QK, C_OV",
               _unbalanced),
    Capability("line_coordinates", "X(mu_OV), Y(mu_QK) and the slope: trajectories are straight lines",
               PARAMETERIZATIONS, "", _per_parameterization(X="line_X", Y="line_Y", slope="line_slope")),
    Capability("orbit", "the first integral H and the orbit through (mu_OV_0, mu_QK_0)", PARAMETERIZATIONS, "",
               _per_parameterization(first_integral="first_integral", orbit="orbit")),
    Capability("state_at_loss", "the margin at a loss, the state equation F(p; s, r) = 0 and the state in p",
               ("CACO",), "the state at a loss is derived for CACO from zero initialization only "
               "(the paper's sharpness result)",
               _fixed(margin="sharpness.margin", state_equation="sharpness.state_equation",
                      alpha="sharpness.state.alpha", mu_QK="sharpness.state.mu_QK",
                      mu_OV="sharpness.state.mu_OV")),
    Capability("sharpness_signs", "the signs of the rate-ratio derivatives of the state at a loss", ("CACO",),
               "the sharpness signs are derived for CACO from zero initialization only",
               _fixed(**{key: f"sharpness.sign_value.{key}" for key in _SIGNS})),
    Capability("asymptotics", "the early phase (attention frozen) and the late-time limits", ("CACO",),
               "the asymptotics are derived for CACO from zero initialization only",
               _fixed(**{f"early.{k}": f"asymptotics.early.{k}" for k in _EARLY},
                      **{f"late.{k}": f"asymptotics.late.{k}" for k in _LATE})),
)}


def _reduction(task, parameterization):
    """The engine's reduction: the cached one for a built-in task, else derived."""
    from ..engine.task import Task
    if isinstance(task, Task) and task.name not in _builtin_names():
        from ..engine.reduce import reduce_task
        return task.name, reduce_task(task, parameterization)
    name = task.name if isinstance(task, Task) else task
    from ..task_catalog import task_reduction
    return name, task_reduction(name, parameterization)


def _builtin_names():
    from .registry import TASKS
    return set(TASKS)


def _rate_map(mapping):
    """The mapping of the learning rates and of their ratio r = eta_QK/eta_OV."""
    from ..symbolic.symbols import eta_OV, eta_QK, r
    subs = dict(mapping)
    ratio = (subs.get(eta_QK, eta_QK) / eta_QK) / (subs.get(eta_OV, eta_OV) / eta_OV)
    if ratio != 1:
        subs[r] = ratio * r
    return subs


def _inheritance(task, name, parameterization):
    """``(mapping, None)`` when ``task`` has the paper's closed forms (mapping {} for the paper
    itself), else ``(None, reason)``."""
    if task == "paper" or getattr(task, "name", None) == "paper":
        return {}, None
    label, red = _reduction(task, parameterization)
    if red.mapping is None:
        return None, (f"task {label!r} ({parameterization}) has no {name}: the engine does not map it onto "
                      f"the paper's equations ({red.note})")
    from ..symbolic.symbols import RATES
    touched = [c for c in CIRCUITS.values() if c.factorized(parameterization)
               and any(str(k) == c.rate for k in red.mapping if k in RATES)]
    if touched:
        return None, (f"task {label!r} ({parameterization}) has no {name}: its mapping rescales the rate of the "
                      f"factorized {touched[0].name} circuit, which the paper's closed forms write in the "
                      "factor rates")
    return red.mapping, None


def _reason(task, name, parameterization):
    """None when ``task`` has capability ``name`` in ``parameterization``, else why not."""
    if name not in CAPABILITIES:
        raise ValueError(f"unknown capability {name!r}; known: {', '.join(CAPABILITIES)}")
    cap = CAPABILITIES[name]
    if parameterization not in cap.parameterizations:
        return cap.why_not
    return _inheritance(task, name, parameterization)[1]


def capabilities(task, parameterization: str = "CACO") -> dict:
    """``{capability name: None (available) or the reason it is not}`` for ``task``
    (a built-in name or a :class:`~derivations.engine.task.Task`).

    Parameters
    ----------
    task : str or Task
        A built-in task's name or a task.
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Default "CACO".

    Returns
    -------
    dict[str, str or None]
        One entry per capability of :data:`CAPABILITIES`.

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of the four.
    """
    parameterization = check_parameterization(parameterization)
    return {name: _reason(task, name, parameterization) for name in CAPABILITIES}


def capability(task, name: str, parameterization: str = "CACO") -> dict:
    """The closed forms of capability ``name`` for ``task``: ``{key: sympy expression}``.

    Parameters
    ----------
    task : str or Task
        A built-in task's name or a task.
    name : str
        A capability of :data:`CAPABILITIES`.
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, optional
        Default "CACO".

    Returns
    -------
    dict[str, sympy.Expr]
        The paper's closed forms, with the task's mapping of the rates applied.

    Raises
    ------
    CapabilityUnavailable
        The task does not have it; the message says why.
    ValueError
        ``name`` is not a capability, or ``parameterization`` unknown.
    """
    parameterization = check_parameterization(parameterization)
    reason = _reason(task, name, parameterization)
    if reason is not None:
        raise CapabilityUnavailable(reason)
    mapping, _ = _inheritance(task, name, parameterization)
    if name == "published_equations":
        from .paper.reduction import published_caco
        out = dict(zip(("alpha", "loss", "dmu_OV_dt", "dmu_QK_dt"), published_caco()))
    else:
        from ..catalog import results
        res = results()
        out = {key: res[result] for key, result in CAPABILITIES[name].results(parameterization).items()}
    if mapping:
        subs = _rate_map(mapping)
        out = {key: expr.subs(subs, simultaneous=True) for key, expr in out.items()}
    return out
