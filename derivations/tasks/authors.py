r"""The authors' Figure-2 task for the engine, built from :mod:`derivations.core.authors_setting`.

The expected-count limit of the authors' sampler: a class-:math:`k` context of
``SEQ_LEN - 2`` tokens holds each token :math:`v` with expected count
``(SEQ_LEN - 2) * weight_tenths(k)[v] / TICKETS``. The common ids that are
neither a query nor a label form one shared group ``c``; the label and query
tokens are per-class groups that also appear (as common tokens) in the other
classes' contexts; the relevant ids are ten per-class groups ``r0 .. r9``.
Numeric only: the symbolic engine refuses it
(:meth:`~derivations.engine.task.Task.check_symbolic`), because of the
unscaled score scale, the vocabulary-wide output and the other classes' tokens
in a context.

>>> from derivations.tasks.authors import AUTHORS
>>> [g.name for g in AUTHORS.groups][:4], AUTHORS.group("r9").multiplicity
(['c', 'label', 'q', 'r0'], 4)
"""
from __future__ import annotations

import sympy as sp

from ..core import authors_setting as S
from ..engine.task import Task, TokenGroup

__all__ = ["AUTHORS", "authors_task"]


def _expected_copies(token: int) -> sp.Rational:
    """Expected copies of ``token`` among a class-0 context (the same per class, by the setting's symmetry)."""
    return sp.Rational((S.SEQ_LEN - 2) * S.weight_tenths(0)[token], S.TICKETS)


def authors_task() -> Task:
    """The authors' task in its expected-count limit (see the module docstring)."""
    context = S.SEQ_LEN - 2
    special = set(S.QUERY_TOKENS) | set(S.LABEL_TOKENS)
    common_ids = [v for v in range(S.NUM_COMMON) if v not in special]
    common = _expected_copies(common_ids[0])
    relevant = list(S.relevant_ids(0))
    groups = [TokenGroup("c", per_class=False, multiplicity=common, types=len(common_ids)),
              TokenGroup("label", per_class=True, multiplicity=_expected_copies(S.LABEL_TOKENS[0]),
                         other_multiplicity=_expected_copies(S.LABEL_TOKENS[0])),
              TokenGroup("q", per_class=True, multiplicity=_expected_copies(S.QUERY_TOKENS[0]),
                         other_multiplicity=_expected_copies(S.QUERY_TOKENS[0]))]
    groups += [TokenGroup(f"r{i}", per_class=True, multiplicity=_expected_copies(v))
               for i, v in enumerate(relevant)]
    copies = ", ".join(f"{float(_expected_copies(v)):g}" for v in relevant[:2])
    description = (
        f"The authors' Figure-2 task, expected-count limit: V = {S.VOCAB} one-hot tokens (unscaled), "
        f"{S.NUM_CLASSES} classes, common tokens 0-{S.NUM_COMMON - 1} ({common} expected copies each; queries "
        f"{min(S.QUERY_TOKENS)}-{max(S.QUERY_TOKENS)} and labels {min(S.LABEL_TOKENS)}-{max(S.LABEL_TOKENS)} among "
        f"them), {len(relevant)} relevant types per class with {copies}, ..., "
        f"{float(_expected_copies(relevant[-1])):g} expected copies, the query "
        f"attends over all {context + 1} input positions itself included, scores scaled by 1/sqrt({S.VOCAB}), "
        f"{S.VOCAB}-way output. Numeric only.")
    return Task(name="authors", description=description, groups=tuple(groups), query="q", query_in_context=True,
                relevant=tuple(f"r{i}" for i in range(len(relevant))), outputs="vocabulary", label="label",
                classes=S.NUM_CLASSES, embedding_scale=1,
                score_scale=sp.sqrt(sp.Rational(*S.SCORE_SCALE_SQUARED)), defaults=(("M", S.NUM_CLASSES),))


#: The authors' task (numeric only).
AUTHORS = authors_task()
