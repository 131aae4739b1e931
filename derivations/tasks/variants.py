"""The paper's task and its variants, as :class:`~derivations.engine.task.Task` data.

All four share the paper's structure (a query ``q_k``, ``m`` copies of the
relevant token ``r_k``, ``n`` irrelevant tokens); the variants spread the
irrelevant tokens over ``n_c`` shared one-hot types, let the query attend to
itself, or both. Each is reduced by the engine
(:func:`derivations.engine.reduce.reduce_task`); those the engine maps onto
the paper's equations inherit the paper's closed forms
(:mod:`derivations.tasks.closed_forms`).

>>> from derivations.tasks.variants import VARIANTS
>>> list(VARIANTS)
['paper', 'shared-irrelevant', 'query-in-context', 'shared-irrelevant+query-in-context']
"""
from __future__ import annotations

from ..core.vocabulary import PAPER_SETTING
from ..engine.task import Task, TokenGroup, n_c
from ..symbolic.symbols import m, n

__all__ = ["paper_like", "VARIANTS"]


def paper_like(name: str, description: str, *, shared: bool, query_in_context: bool) -> Task:
    """The paper's task, with the irrelevant tokens ``shared`` over ``n_c``
    one-hot types and/or the query ``query_in_context``."""
    groups = [TokenGroup("q", per_class=True, multiplicity=0),
              TokenGroup("r", per_class=True, multiplicity=m)]
    if shared:
        groups.append(TokenGroup("u", per_class=False, multiplicity=n / n_c, types=n_c))
    else:
        groups.append(TokenGroup("z", per_class=False, multiplicity=n, types=1, embedded=False))
    return Task(name=name, description=description, groups=tuple(groups), query="q",
                query_in_context=query_in_context, relevant=("r",),
                parameters=("n_c",) if shared else (),
                defaults=tuple(PAPER_SETTING.items()) + ((("n_c", 1),) if shared else ()))


#: The paper's task and its three variants, by name.
VARIANTS = {
    "paper": paper_like(
        "paper", "The paper's model: m copies of the class's relevant token r_k and n zero-embedded "
        "irrelevant tokens; the query q_k attends over the context only.", shared=False, query_in_context=False),
    "shared-irrelevant": paper_like(
        "shared-irrelevant", "As paper, but the n irrelevant tokens are spread evenly over n_c shared "
        "types u_1..u_{n_c}, each one-hot (embedding dimension 2M + n_c).", shared=True, query_in_context=False),
    "query-in-context": paper_like(
        "query-in-context", "As paper, but the query q_k is also one of the attended positions "
        "(multiplicity 1).", shared=False, query_in_context=True),
    "shared-irrelevant+query-in-context": paper_like(
        "shared-irrelevant+query-in-context", "Both variants: n_c shared one-hot irrelevant types and the "
        "query attending to itself.", shared=True, query_in_context=True),
}
