r"""Token distributions and online batches of the paper's synthetic task.

Vocabulary and classes
----------------------
There are :data:`V` = 50 token ids, embedded as plain one-hot vectors, and
:data:`NUM_CLASSES` = 4 classes :math:`k = 0, \dots, 3`.  The context tokens
of a class-:math:`k` sequence are i.i.d. with weights

.. math::

    w_v = 1 \; (v < 10), \qquad
    w_{10(k+1) + j} = \tfrac{j + 1}{10} \; (j = 0, \dots, 9), \qquad
    p_v = w_v / \textstyle\sum_u w_u = w_v / 15.5 ,

so ids 0-9 are *common* (irrelevant) tokens and the ten ids of block
:math:`k + 1` are the class's *relevant* ("distinct") tokens.  The query token
of class :math:`k` is :data:`QUERY_TOKENS` ``[k]`` (5..8) and its label token
:data:`LABEL_TOKENS` ``[k]`` (1..4), both common ids.

Layouts
-------
* Figure 2 (:func:`sample_fig2_batches`): the class is uniform per sequence;
  the model reads ``seq_len - 2`` context tokens and the query token and
  predicts the label token.
* Figure 3 (:func:`sample_fig3_batches`): every batch holds ``batch_size / 4``
  sequences of each class in random order; the pair is swapped: the last input
  token is the *label* token and the target is the *query* token.

Counts instead of positions
---------------------------
The models have no positional information, so a sequence enters only through
its token-count vector :math:`n \in \mathbb{N}^{V}` (counts of the context
*and* of the last input token).  The context counts of a class-:math:`k`
sequence are multinomial; since the class only relabels which block of ids
the ten relevant weights sit on, they are drawn as a 20-slot multinomial
(:data:`SLOT_PROBABILITIES`) and scattered onto the class's ids.  The
position-level sampler :func:`sample_fig2_sequences` draws explicit token-id
sequences of the same distribution; :func:`sequences_to_counts` maps them to
counts (``tests/test_experiments_models.py`` checks that the count model and a
per-position reference agree on the same sequences).

All randomness comes from a caller-supplied :class:`numpy.random.Generator`,
so a run is a deterministic function of its seed.

>>> import numpy as np
>>> b = sample_fig2_batches(np.random.default_rng(0), n_batches=2, batch_size=3, seq_len=64)
>>> b.counts.shape, b.query.shape, b.target.shape
((2, 3, 50), (2, 3), (2, 3))
>>> bool(np.all(b.counts.sum(-1) == 63))
True
>>> expected_counts(64).sum(-1)
array([63., 63., 63., 63.])
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..validation import check_int

__all__ = [
    "V", "NUM_CLASSES", "NUM_COMMON", "QUERY_TOKENS", "LABEL_TOKENS", "RELEVANT",
    "SLOT_PROBABILITIES", "class_weights", "class_probabilities", "expected_counts",
    "Batch", "sample_fig2_batches", "sample_fig3_batches", "sample_fig2_sequences",
    "sequences_to_counts",
]

#: Vocabulary size (one-hot embedding dimension).
V = 50
#: Number of classes.
NUM_CLASSES = 4
#: Number of common (irrelevant) token ids: ids ``0`` to ``NUM_COMMON - 1``.
NUM_COMMON = 10
#: Query token of each class (Figure 2: last input token; Figure 3: target).
QUERY_TOKENS = np.array([5, 6, 7, 8])
#: Label token of each class (Figure 2: target; Figure 3: last input token).
LABEL_TOKENS = np.array([1, 2, 3, 4])
#: Boolean mask of the relevant ("distinct") ids, ``id > 9``.
RELEVANT = np.arange(V) >= NUM_COMMON

_SLOT_WEIGHTS = np.concatenate([np.ones(NUM_COMMON), np.arange(1, 11) / 10.0])
#: Probabilities of the 20 slots (10 common ids, then the class's 10 relevant ids).
SLOT_PROBABILITIES = _SLOT_WEIGHTS / _SLOT_WEIGHTS.sum()
# token id of each slot for each class: (NUM_CLASSES, 20)
_SLOT_TOKENS = np.array([np.concatenate([np.arange(NUM_COMMON), 10 * (k + 1) + np.arange(10)])
                         for k in range(NUM_CLASSES)])


def class_weights() -> np.ndarray:
    """Unnormalized context-token weights ``w`` of each class, shape ``(4, 50)``."""
    w = np.zeros((NUM_CLASSES, V))
    w[:, :NUM_COMMON] = 1.0
    for k in range(NUM_CLASSES):
        w[k, 10 * (k + 1): 10 * (k + 1) + 10] = np.arange(1, 11) / 10.0
    return w


def class_probabilities() -> np.ndarray:
    """Context-token distribution ``p = w / w.sum()`` of each class, shape ``(4, 50)``."""
    w = class_weights()
    return w / w.sum(axis=1, keepdims=True)


def expected_counts(seq_len: int = 64, *, layout: str = "fig2") -> np.ndarray:
    r"""Expected token-count vector of each class, shape ``(4, 50)``.

    ``(seq_len - 2) p_k`` plus one count of the last input token (the query
    token for ``layout="fig2"``, the label token for ``"fig3"``).  This is the
    input of the expected-count (population) limit of the task, e.g.
    ``models.loss_and_grad(params, expected_counts(), QUERY_TOKENS,
    LABEL_TOKENS)``.
    """
    seq_len = check_int("seq_len", seq_len, 3)
    if layout not in ("fig2", "fig3"):
        raise ValueError(f"layout must be 'fig2' or 'fig3', got {layout!r}")
    counts = (seq_len - 2) * class_probabilities()
    last = QUERY_TOKENS if layout == "fig2" else LABEL_TOKENS
    counts[np.arange(NUM_CLASSES), last] += 1.0
    return counts


class Batch(NamedTuple):
    """A stack of batches: ``counts`` ``(..., B, V)`` float64 (context plus last
    input token), ``query`` ``(..., B)`` the last input token id, ``target``
    ``(..., B)`` the token id to predict, ``label_class`` ``(..., B)`` the class."""

    counts: np.ndarray
    query: np.ndarray
    target: np.ndarray
    label_class: np.ndarray


def _context_counts(rng, classes, seq_len):
    """Multinomial context counts scattered onto each class's ids: ``classes.shape + (V,)``."""
    slots = rng.multinomial(seq_len - 2, SLOT_PROBABILITIES, size=classes.shape)
    counts = np.zeros(classes.shape + (V,))
    np.put_along_axis(counts, _SLOT_TOKENS[classes], slots, axis=-1)
    return counts


def sample_fig2_batches(rng: np.random.Generator, n_batches: int, batch_size: int,
                        seq_len: int = 64) -> Batch:
    """Draw ``n_batches`` Figure-2 batches (class uniform per sequence).

    The generator is consumed in a fixed order (classes of all batches, then
    the context counts), so the result depends only on the generator state and
    the arguments.  Returns a :class:`Batch` with leading shape
    ``(n_batches, batch_size)``; the query token is included in ``counts``.
    """
    n_batches = check_int("n_batches", n_batches, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    seq_len = check_int("seq_len", seq_len, 3)
    classes = rng.integers(0, NUM_CLASSES, size=(n_batches, batch_size))
    counts = _context_counts(rng, classes, seq_len)
    query = QUERY_TOKENS[classes]
    np.put_along_axis(counts, query[..., None], np.take_along_axis(counts, query[..., None], -1) + 1, -1)
    return Batch(counts, query, LABEL_TOKENS[classes], classes)


def sample_fig3_batches(rng: np.random.Generator, n_batches: int, batch_size: int = 128,
                        seq_len: int = 64) -> Batch:
    """Draw ``n_batches`` balanced Figure-3 batches.

    Each batch has ``batch_size / 4`` sequences of every class in a random
    order (``batch_size`` must be a multiple of 4).  The last input token
    (``query`` field, included in ``counts``) is the class's *label* token
    1..4 and ``target`` is its *query* token 5..8.
    """
    n_batches = check_int("n_batches", n_batches, 1)
    batch_size = check_int("batch_size", batch_size, NUM_CLASSES)
    if batch_size % NUM_CLASSES:
        raise ValueError(f"batch_size must be a multiple of {NUM_CLASSES} for Figure 3, got {batch_size}")
    seq_len = check_int("seq_len", seq_len, 3)
    base = np.repeat(np.arange(NUM_CLASSES), batch_size // NUM_CLASSES)
    classes = rng.permuted(np.broadcast_to(base, (n_batches, batch_size)), axis=-1)
    counts = _context_counts(rng, classes, seq_len)
    last = LABEL_TOKENS[classes]
    np.put_along_axis(counts, last[..., None], np.take_along_axis(counts, last[..., None], -1) + 1, -1)
    return Batch(counts, last, QUERY_TOKENS[classes], classes)


def sample_fig2_sequences(rng: np.random.Generator, batch_size: int, seq_len: int = 64):
    """Explicit Figure-2 sequences, position by position.

    Returns ``(tokens, target)``: ``tokens`` ``(batch_size, seq_len - 1)`` int
    token ids (``seq_len - 2`` context tokens drawn i.i.d. from the class
    distribution with :meth:`numpy.random.Generator.choice`, then the query
    token), ``target`` ``(batch_size,)`` the label token.  This is the
    authors' layout literally; :func:`sequences_to_counts` reduces it to the
    count representation used for training.
    """
    batch_size = check_int("batch_size", batch_size, 1)
    seq_len = check_int("seq_len", seq_len, 3)
    probs = class_probabilities()
    classes = rng.integers(0, NUM_CLASSES, size=batch_size)
    tokens = np.empty((batch_size, seq_len - 1), dtype=np.int64)
    for i, k in enumerate(classes):
        tokens[i, :-1] = rng.choice(V, size=seq_len - 2, p=probs[k])
    tokens[:, -1] = QUERY_TOKENS[classes]
    return tokens, LABEL_TOKENS[classes]


def sequences_to_counts(tokens) -> np.ndarray:
    """Token-count vectors ``(..., V)`` float64 of token-id sequences ``(..., T)``."""
    tokens = np.asarray(tokens)
    if tokens.size and (tokens.min() < 0 or tokens.max() >= V):
        raise ValueError(f"token ids must lie in [0, {V}), got range [{tokens.min()}, {tokens.max()}]")
    flat = tokens.reshape(-1, tokens.shape[-1])
    counts = np.zeros((flat.shape[0], V))
    np.add.at(counts, (np.arange(flat.shape[0])[:, None], flat), 1.0)
    return counts.reshape(tokens.shape[:-1] + (V,))
