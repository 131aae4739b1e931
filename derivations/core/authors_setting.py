r"""The authors' Figure-2 task, defined once, as plain data.

The engine's ``authors`` task (:func:`derivations.tasks.get_task`) and the
experiments' sampled task (:data:`numerics.experiments.task_sampling.AUTHORS`,
which the SGD runs and the theory share) read the task from here, so they
cannot drift apart. Plain Python (no SymPy, no NumPy), as the rest of
:mod:`derivations.core`.

The task (the authors' public notebooks): :data:`VOCAB` = 50 one-hot tokens,
:data:`NUM_CLASSES` = 4 classes. The context tokens of a class-:math:`k`
sequence are i.i.d. with weights

.. math::

    w_v = 1 \; (v < 10), \qquad
    w_{10(k+1) + j} = \tfrac{j + 1}{10} \; (j = 0, \dots, 9),

(sum 15.5), so ids 0-9 are *common* tokens and the ten ids of block
:math:`k + 1` are the class's *relevant* tokens. Every weight is a whole
number of tenths (:func:`weight_tenths`), 155 tenths per class
(:data:`TICKETS`): the sampler draws a context token as one of 155 equally
likely tickets. The query token of class :math:`k` is :data:`QUERY_TOKENS`
``[k]`` and its label :data:`LABEL_TOKENS` ``[k]``, both common ids. A
sequence of :data:`SEQ_LEN` = 64 tokens holds ``SEQ_LEN - 2`` context tokens,
the query (attended, the last input) and the label (the target). Attention
scores are scaled by :math:`1/\sqrt{V}` (:data:`SCORE_SCALE_SQUARED` is
:math:`1/V`, exact); the output is :data:`VOCAB`-way.

>>> sum(weight_tenths(0)), TICKETS
(155, 155)
>>> list(relevant_ids(1))[:3], QUERY_TOKENS[1], LABEL_TOKENS[1]
([20, 21, 22], 6, 2)
"""
from __future__ import annotations

__all__ = ["VOCAB", "NUM_CLASSES", "NUM_COMMON", "RELEVANT_PER_CLASS", "QUERY_TOKENS",
           "LABEL_TOKENS", "SEQ_LEN", "TICKETS", "SCORE_SCALE_SQUARED", "relevant_ids",
           "weight_tenths"]

#: Vocabulary size (one-hot embedding dimension, number of output classes).
VOCAB = 50
#: Number of classes.
NUM_CLASSES = 4
#: Number of common (irrelevant) token ids: they are ``range(NUM_COMMON)``.
NUM_COMMON = 10
#: Relevant token ids per class (weights 0.1, 0.2, ..., 1.0).
RELEVANT_PER_CLASS = 10
#: Query token of each class (Figure 2: the last input token; Figure 3: the target).
QUERY_TOKENS = (5, 6, 7, 8)
#: Label token of each class (Figure 2: the target; Figure 3: the last input token).
LABEL_TOKENS = (1, 2, 3, 4)
#: The published sequence length: ``SEQ_LEN - 2`` context tokens, the query, the label.
SEQ_LEN = 64
#: Tenths of weight per class: each context token is one of this many equally likely tickets.
TICKETS = 155
#: The square of the attention-score scale, as the fraction (numerator, denominator) = (1, VOCAB).
SCORE_SCALE_SQUARED = (1, VOCAB)


def relevant_ids(k: int) -> range:
    """The relevant token ids of class ``k``: ``range(10(k+1), 10(k+1) + 10)``.

    Parameters
    ----------
    k : int
        The class, in [0, :data:`NUM_CLASSES` - 1].

    Returns
    -------
    range
        The :data:`RELEVANT_PER_CLASS` consecutive ids of the class's relevant tokens.

    Raises
    ------
    ValueError
        If ``k`` is not an integer in [0, :data:`NUM_CLASSES` - 1].
    """
    if not (isinstance(k, int) and 0 <= k < NUM_CLASSES):
        raise ValueError(f"class must be an integer in [0, {NUM_CLASSES - 1}]; got {k!r}")
    start = NUM_COMMON * (k + 1)
    return range(start, start + RELEVANT_PER_CLASS)


def weight_tenths(k: int) -> tuple:
    """The context-token weights of class ``k`` in tenths (integers, length :data:`VOCAB`).

    Parameters
    ----------
    k : int
        The class, in [0, :data:`NUM_CLASSES` - 1].

    Returns
    -------
    tuple of int
        Weight of each token id in tenths: 10 for a common id, 1 to 10 for the
        class's relevant ids, 0 otherwise (sum :data:`TICKETS`).

    Raises
    ------
    ValueError
        If ``k`` is not an integer in [0, :data:`NUM_CLASSES` - 1].
    """
    relevant = relevant_ids(k)
    return tuple(10 if v < NUM_COMMON else (v - relevant.start + 1 if v in relevant else 0)
                 for v in range(VOCAB))
