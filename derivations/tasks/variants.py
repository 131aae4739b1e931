"""The paper's task and its variants, read from the task files shipped in ``derivations/tasks/files``.

All share the paper's structure (a query ``q_k``, ``m`` copies of relevant
tokens, ``n`` irrelevant tokens); the variants spread the irrelevant tokens
over ``n_c`` shared one-hot types, let the query attend to itself, or both;
``query-copies`` puts the query's own token ``s`` times in its context and
spreads the relevant copies over ``R`` types per class. Each is a TOML file
in the format of :mod:`derivations.engine.task_file` (the format of a user's
own task), read with :mod:`importlib.resources`; each is reduced by the engine
(:func:`derivations.engine.reduce.reduce_task`), and those the engine maps onto
the paper's equations inherit the paper's closed forms
(:mod:`derivations.tasks.closed_forms`).

>>> from derivations.tasks.variants import VARIANT_FILES
>>> list(VARIANT_FILES)
['paper', 'shared-irrelevant', 'query-in-context', 'shared-irrelevant+query-in-context', 'query-copies']
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..engine.task_file import task_from_toml

__all__ = ["VARIANT_FILES", "variant_text", "variant"]

#: The shipped task files, by task name (``derivations/tasks/files/<name>.toml``).
VARIANT_FILES = ("paper", "shared-irrelevant", "query-in-context", "shared-irrelevant+query-in-context",
                 "query-copies")


def variant_text(name: str) -> str:
    """The text of the shipped task file of ``name``.

    Parameters
    ----------
    name : str
        One of :data:`VARIANT_FILES`.

    Returns
    -------
    str

    Raises
    ------
    FileNotFoundError
        If no task file of that name is shipped.
    """
    return resources.files(__package__).joinpath("files", f"{name}.toml").read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def variant(name: str):
    """The task of the shipped file of ``name``, read once, when first asked for (so that
    looking up the paper's task does not read and build the others).

    Parameters
    ----------
    name : str
        One of :data:`VARIANT_FILES`.

    Returns
    -------
    Task

    Raises
    ------
    FileNotFoundError
        If no task file of that name is shipped.
    """
    return task_from_toml(variant_text(name), f"derivations/tasks/files/{name}.toml")
