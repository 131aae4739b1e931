r"""The one registry of check kinds, and what each kind requires.

A *kind* of check is a function of a :class:`~numerics.verify.context.Context`
(one parameterization and one learning-rate ratio of one subject) that
records :class:`~numerics.verify.records.Check` records. It is registered with
:func:`check_kind`, with

* a **suite**: ``"paper"`` (the paper's hard-wired model against its reduced
  ODE and closed forms: the default of ``python -m numerics.verify``) or
  ``"task"`` (an engine task's reduced system against its full matrix model:
  the default with ``--task NAME``);
* the **capabilities** it requires of the subject (:data:`CAPABILITIES`). A
  subject that lacks one skips the kind and says why, as the engine says
  "no first integral, because ...".

Another family of checks registers more kinds the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Kind", "KINDS", "CAPABILITIES", "SUITES", "check_kind",
           "suite_kinds", "capabilities", "missing_capability"]

#: The suites: which kinds run by default for the paper's model and for a task.
SUITES = ("paper", "task")

#: Capability name -> what it is.
CAPABILITIES = {
    "paper_model": "the paper's hard-wired full model (numerics.model.paper) and its "
                   "generated reduced system (numerics.dynamics.reduced_system)",
    "closed_form": "the paper's closed forms (numerics.dynamics.closed_form: state and time at a loss, "
                   "orbits)",
    "first_integral": "a first integral of the reduced flow",
    "task_model": "the engine's reduction of the task and its full matrix model "
                  "(numerics.model)",
    "observables": "the engine's closed ODE in the observables (score and logit gaps)",
}


@dataclass(frozen=True)
class Kind:
    """A registered kind of check: ``func(ctx)`` records checks on ``ctx``."""

    name: str
    func: object
    suite: str
    requires: tuple


#: Kind name -> :class:`Kind`, in the order they run (every suite).
KINDS = {}


def check_kind(name, *, suite="paper", requires=("paper_model",)):
    """Register a check function under ``name``.

    Parameters
    ----------
    name : str
    suite : {"paper", "task"}, optional
    requires : tuple of str, optional
        The capabilities it needs, keys of :data:`CAPABILITIES`.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Raises
    ------
    ValueError
        An unknown suite or capability.
    """
    if suite not in SUITES:
        raise ValueError(f"suite must be one of {SUITES}; got {suite!r}")
    unknown = [c for c in requires if c not in CAPABILITIES]
    if unknown:
        raise ValueError(f"unknown capabilities {unknown}; valid: {list(CAPABILITIES)}")

    def register(func):
        KINDS[name] = Kind(name, func, suite, tuple(requires))
        return func
    return register


def suite_kinds(suite) -> tuple:
    """The names of the kinds of ``suite``, in registry order.

    Parameters
    ----------
    suite : {"paper", "task"}

    Returns
    -------
    tuple of str
    """
    return tuple(k.name for k in KINDS.values() if k.suite == suite)


_NOT_PAPER = ("only the paper's task has the hard-wired model, its generated reduced system and "
              "closed forms; task {task!r} is verified against its own full matrix model by the "
              "task kinds")


@lru_cache(maxsize=None)
def capabilities(task, parameterization) -> dict:
    """Capability name -> ``None`` (the subject has it) or the reason it has not.

    Parameters
    ----------
    task : str or None
        None is the paper's model in the paper's parameter space (plain
        ``numerics.verify``); a task name is an engine task (``--task``; the engine
        is asked only for the capabilities that depend on it).
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    dict
    """
    out = dict.fromkeys(CAPABILITIES)
    if task is None:
        out["task_model"] = out["observables"] = (
            "the task kinds compare an engine task's reduced system with its full matrix model; "
            "give --task NAME")
        return out
    if task != "paper":
        out["paper_model"] = out["closed_form"] = _NOT_PAPER.format(task=task)
    from derivations.tasks import get_task

    from derivations.task_catalog import task_reduction
    red = task_reduction(get_task(task), parameterization)
    if red.odes is None:
        out["observables"] = f"no closed ODE in the observables, because {_reason(red.note)}"
    if red.first_integral is None and task != "paper":
        out["first_integral"] = f"no first integral, because {_reason(red.note)}"
    return out


def _reason(note):
    """The engine's explanation (its note without the leading description)."""
    text = str(note)
    for marker in ("no first integral: ", "; "):
        if marker in text:
            return text.split(marker, 1)[1]
    return text or "the engine found none"


def missing_capability(kind, task, parameterization):
    """Why ``kind`` is skipped for the subject, or None when it has every capability ``kind`` requires.

    Parameters
    ----------
    kind : str
    task : str or None
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    str or None
        One line.
    """
    have = capabilities(task, parameterization)
    for cap in KINDS[kind].requires:
        if have[cap] is not None:
            return f"needs {cap}: {have[cap]}"
    return None
