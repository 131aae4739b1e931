"""The built-in tasks by name: the paper and its variants, and the authors' task.

>>> from derivations.tasks.registry import get_task, symbolic_task_names
>>> get_task("paper").relevant, symbolic_task_names()[-1]
(('r',), 'query-copies')
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from ..engine.task import Task
from ..engine.task_file import load_task, task_from_text
from .authors import AUTHORS
from .variants import VARIANT_FILES, variant

__all__ = ["TASKS", "get_task", "is_task_file", "is_builtin", "task_key", "symbolic_task_names"]

class _BuiltinTasks(Mapping):
    """The built-in tasks by name: the shipped task files (read on first use) and the authors'."""

    def __getitem__(self, name):
        if name == "authors":
            return AUTHORS
        if name not in VARIANT_FILES:
            raise KeyError(name)
        return variant(name)

    def __iter__(self):
        yield from VARIANT_FILES
        yield "authors"

    def __len__(self):
        return len(VARIANT_FILES) + 1


#: The built-in tasks by name (a read-only mapping).
TASKS = _BuiltinTasks()
#: The other tasks this process was given (from files or as Task objects), by name.
_OWN = {}


def is_task_file(name) -> bool:
    """Whether ``name`` names a task file rather than a built-in task (ends in ``.toml``
    or holds a path separator; not a canonical task text).

    Parameters
    ----------
    name : object
        What the task was named by (usually a str).

    Returns
    -------
    bool
    """
    return (isinstance(name, str) and not name.startswith("{")
            and (name.endswith(".toml") or "/" in name or os.sep in name))


def task_key(task) -> str:
    """What identifies ``task`` in stored settings and run identities: a built-in task's
    name, else its canonical text (:func:`derivations.engine.task_file.task_text`), which
    :func:`get_task` reads back.

    Parameters
    ----------
    task : Task

    Returns
    -------
    str
    """
    from ..engine.task_file import task_text
    return task.name if is_builtin(task) else task_text(task)


def get_task(name) -> Task:
    """The task ``name`` names: a built-in task's name, the path of a task file
    (:func:`derivations.engine.task_file.load_task`), a task's canonical text
    (:func:`derivations.engine.task_file.task_text`), or a :class:`Task` (returned as it is).
    A task read from a file or given as a :class:`Task` is then also known by its name in
    this process (so that code handed its name finds it).

    Parameters
    ----------
    name : str, path or Task
        A built-in or already known task's name, a task file's path, a canonical task text, or a task.

    Returns
    -------
    Task

    Raises
    ------
    ValueError
        An unknown name (listing the valid ones), a task file that cannot be read
        (one line naming the file and the key), or a task whose name is a built-in
        task's, or another task's used in this process, but which is another task.
    """
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if isinstance(name, Task):
        task = name
    elif isinstance(name, str) and name.startswith("{"):
        task = task_from_text(name)       # a canonical task text (a sweep's stored settings)
    elif is_task_file(name):
        task = load_task(name)
    elif isinstance(name, str) and name in TASKS:
        return TASKS[name]
    elif isinstance(name, str) and name in _OWN:
        return _OWN[name]
    else:
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(TASKS)}, or the path of a "
                         "task file (.toml)")
    if task.name in TASKS and TASKS[task.name] != task:
        raise ValueError(f"task {task.name!r} differs from the built-in task of that name: give it "
                         "another name")
    if task.name not in TASKS and _OWN.setdefault(task.name, task) != task:
        raise ValueError(f"task {task.name!r} differs from another task of that name used in this "
                         "process: give it another name")
    return task


def is_builtin(task) -> bool:
    """Whether ``task`` (a :class:`Task`) is a built-in task.

    Parameters
    ----------
    task : Task

    Returns
    -------
    bool
    """
    return TASKS.get(task.name) == task


def symbolic_task_names() -> tuple:
    """Built-in tasks the symbolic engine derives (all but the numeric-only ones)."""
    return tuple(name for name, task in TASKS.items() if task.why_not_symbolic() is None)
