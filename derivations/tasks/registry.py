"""The built-in tasks by name: the paper and its variants, and the authors' task.

>>> from derivations.tasks.registry import get_task, symbolic_task_names
>>> get_task("paper").relevant, symbolic_task_names()[-1]
(('r',), 'shared-irrelevant+query-in-context')
"""
from __future__ import annotations

from ..engine.task import Task
from .authors import AUTHORS
from .variants import VARIANTS

__all__ = ["TASKS", "task_names", "get_task", "symbolic_task_names"]

#: The built-in tasks by name.
TASKS = {**VARIANTS, "authors": AUTHORS}


def task_names() -> tuple:
    """Names of the built-in tasks."""
    return tuple(TASKS)


def get_task(name: str) -> Task:
    """The built-in task called ``name`` (ValueError listing the valid names otherwise)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(TASKS)}")
    return TASKS[name]


def symbolic_task_names() -> tuple:
    """Built-in tasks the symbolic engine derives (all but the numeric-only ones)."""
    return tuple(name for name, task in TASKS.items() if task.why_not_symbolic() is None)
