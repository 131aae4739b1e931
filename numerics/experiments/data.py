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
:data:`LABEL_TOKENS` ``[k]`` (1..4), both common ids.  Every constant here is
read from the task's one definition, :mod:`derivations.core.authors_setting`
(shared with the engine's ``authors`` task and the theory prediction).

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
sequence are multinomial.  They are drawn token by token, exactly: every
weight is a multiple of 0.1, so token :math:`v` owns :math:`10 w_v` of
:data:`TICKETS` = 155 equally likely tickets, and a context token is a uniform
integer ticket (:func:`draw_tickets`, one ``Generator.integers`` call for a
whole epoch) looked up in the class's ticket table.  The tickets of many
sequences -- of several seeds, each drawn from its own generator -- become
counts in one table look-up and one :func:`numpy.bincount`
(:func:`counts_from_tickets`), much cheaper than one ``Generator.multinomial``
per sequence.  :func:`sample_fig2_sequences` returns the same draws as explicit
token-id sequences; :func:`sequences_to_counts` maps them to exactly the
counts of :func:`sample_fig2_batches` (``tests/numerics/experiments/test_experiments_models.py``
checks this, that the count model and a per-position reference agree on the
same sequences, and the sampler against the exact multinomial probabilities
with chi-square tests).

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

from derivations.core import authors_setting as _setting

from ..validation import check_int

__all__ = [
    "V", "NUM_CLASSES", "NUM_COMMON", "QUERY_TOKENS", "LABEL_TOKENS", "RELEVANT",
    "TICKETS", "EXACT_COUNT_DTYPES", "class_weights", "class_probabilities", "expected_counts",
    "Batch", "sample_fig2_batches", "sample_fig3_batches", "sample_fig2_sequences",
    "sequences_to_counts", "draw_tickets", "tickets_to_tokens", "counts_from_tickets",
    "draw_fig2_tickets", "fig2_batch_from_tickets",
]

#: Vocabulary size (one-hot embedding dimension).
V = _setting.VOCAB
#: Number of classes.
NUM_CLASSES = _setting.NUM_CLASSES
#: Number of common (irrelevant) token ids: ids ``0`` to ``NUM_COMMON - 1``.
NUM_COMMON = _setting.NUM_COMMON
#: Query token of each class (Figure 2: last input token; Figure 3: target).
QUERY_TOKENS = np.array(_setting.QUERY_TOKENS)
#: Label token of each class (Figure 2: target; Figure 3: last input token).
LABEL_TOKENS = np.array(_setting.LABEL_TOKENS)
#: Boolean mask of the relevant ("distinct") ids, the union of every class's
#: :func:`~derivations.core.authors_setting.relevant_ids` (``id > 9``).
RELEVANT = np.isin(np.arange(V), [v for k in range(NUM_CLASSES) for v in _setting.relevant_ids(k)])


def class_weights() -> np.ndarray:
    """Unnormalized context-token weights ``w`` of each class, shape ``(4, 50)``: the
    tenths of :func:`derivations.core.authors_setting.weight_tenths` divided by 10."""
    return np.array([_setting.weight_tenths(k) for k in range(NUM_CLASSES)], dtype=float) / 10.0


def class_probabilities() -> np.ndarray:
    """Context-token distribution ``p = w / w.sum()`` of each class, shape ``(4, 50)``."""
    w = class_weights()
    return w / w.sum(axis=1, keepdims=True)


def expected_counts(seq_len: int = _setting.SEQ_LEN, *, layout: str = "fig2") -> np.ndarray:
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
    ``(..., B)`` the token id to predict, ``label_class`` ``(..., B)`` the class.

    Also the batches of a sampled engine task
    (:data:`numerics.experiments.task_sampling.TaskBatch`): ``counts`` ``(..., B, T)``
    over its ``T`` token types (the attended positions), ``query`` the query types,
    ``target`` the outputs."""

    counts: np.ndarray
    query: np.ndarray
    target: np.ndarray
    label_class: np.ndarray


# Exact integer form of the class distributions: every weight is a multiple of 0.1, so token v
# of class k owns 10 w_v of TICKETS = 155 equally likely "tickets" (10 per common id, 1..10 for
# the class's relevant ids).  A context token is a uniform ticket in [0, 155) looked up in
# _TICKET_TOKENS[k]: exactly p_v = w_v / 15.5 (inverse CDF on a discrete uniform).
TICKETS = _setting.TICKETS
_TICKET_TOKENS = np.array([np.repeat(np.arange(V), _setting.weight_tenths(k)) for k in range(NUM_CLASSES)])
assert _TICKET_TOKENS.shape == (NUM_CLASSES, TICKETS)
_TICKET_TOKENS_FLAT = _TICKET_TOKENS.reshape(-1).astype(np.intp)
_TICKET_TOKENS_INT16 = _TICKET_TOKENS_FLAT.astype(np.int16)
#: Count dtypes :func:`counts_from_tickets` can write into, with the largest count each holds exactly.
EXACT_COUNT_DTYPES = {np.dtype(np.float64): 2 ** 53, np.dtype(np.float32): 2 ** 24,
                      np.dtype(np.uint16): np.iinfo(np.uint16).max}
#: Tickets per chunk of :func:`counts_from_tickets` (its scratch arrays stay in cache).
_CHUNK_TICKETS = 2 ** 15


def draw_tickets(rng, shape, seq_len):
    """The context tickets of sequences of leading ``shape``: ``shape + (seq_len - 2,)``
    int16 uniform on ``[0, TICKETS)``, one :meth:`numpy.random.Generator.integers` call."""
    return rng.integers(0, TICKETS, size=tuple(shape) + (seq_len - 2,), dtype=np.int16)


def tickets_to_tokens(classes, tickets):
    """Token ids ``(..., T)`` of context tickets ``(..., T)`` of sequences of class ``classes`` ``(...)``."""
    idx = np.asarray(classes)[..., None] * TICKETS + tickets
    return _TICKET_TOKENS_FLAT[idx]


def counts_from_tickets(classes, tickets, last, out=None, *, table=None, n_types=V):
    """Token-count vectors ``(..., V)`` float64 of the context tickets ``(..., T)`` plus the
    last input token ``last`` ``(...)``: a table look-up and a :func:`numpy.bincount` for
    all sequences (any leading shape, e.g. steps x seeds x batch).

    Done in chunks of about :data:`_CHUNK_TICKETS` tickets with scratch arrays
    allocated once: the counts are exact integers, so the result does not depend on
    the chunking, and the temporaries stay in cache instead of costing fresh pages
    for every array (a fresh megabyte costs more than the look-up itself).  ``out``:
    an optional array of the result's shape to write into, of a dtype of
    :data:`EXACT_COUNT_DTYPES` that holds counts up to ``T + 1`` exactly (the
    trainer reuses one ``uint16`` buffer across epochs: a quarter of the memory
    traffic, and the same numbers once multiplied by a float64).

    ``table``: the ticket table ``(K, N)`` of another task (the token type of every
    ticket of each class; :attr:`numerics.experiments.task_sampling.SampledTask.ticket_tokens`)
    with ``n_types`` token types, counts ``(..., n_types)``; default the authors' (:data:`TICKETS`
    per class, :data:`V` ids).  ``last`` None adds no last token."""
    flat_table, n_classes, n_tickets, itype = _ticket_table(table, n_types)
    classes = np.asarray(classes)
    n = classes.size
    tickets = np.asarray(tickets).reshape(n, -1)
    if tickets.size and (tickets.min() < 0 or tickets.max() >= n_tickets):
        raise ValueError(f"tickets must lie in [0, {n_tickets}), got range [{tickets.min()}, {tickets.max()}]")
    if n and (classes.min() < 0 or classes.max() >= n_classes):
        raise ValueError(f"classes must lie in [0, {n_classes}), got range [{classes.min()}, {classes.max()}]")
    shape = classes.shape + (n_types,)
    T = tickets.shape[1]
    if out is None:
        out = np.empty(shape)
    elif (out.shape != shape or not out.flags.c_contiguous
          or EXACT_COUNT_DTYPES.get(out.dtype, 0) < T + 1):
        raise ValueError(f"out must be a C-contiguous array of shape {shape} and a dtype that holds "
                         f"counts up to {T + 1} exactly ({', '.join(map(str, EXACT_COUNT_DTYPES))}), got "
                         f"{out.dtype} {out.shape}")
    result, out = out, out.reshape(-1)
    # sequences per chunk: cache-sized, and few enough that "row * n_types + token" fits in the
    # index type (int16 for the authors' table), so the look-up, the row offsets and the counting
    # index stay small integers
    c = max(1, min(n, _CHUNK_TICKETS // max(T, 1), (int(np.iinfo(itype).max) + 1) // n_types))
    base = (classes.reshape(-1, 1) * n_tickets).astype(itype)
    idx = np.empty((c, T), dtype=itype)
    tok = np.empty((c, T), dtype=itype)
    offsets = (np.arange(c) * n_types).astype(itype)[:, None]
    rows = np.arange(c) * n_types
    if last is not None:
        last = np.asarray(last).reshape(-1)
    for s0 in range(0, n, c):
        m = min(c, n - s0)
        np.add(tickets[s0:s0 + m], base[s0:s0 + m], out=idx[:m])
        np.take(flat_table, idx[:m], out=tok[:m])
        tok[:m] += offsets[:m]
        flat = np.bincount(tok[:m].reshape(-1), minlength=m * n_types)
        if last is not None:
            flat[rows[:m] + last[s0:s0 + m]] += 1
        out[s0 * n_types:(s0 + m) * n_types] = flat
    return result


def _ticket_table(table, n_types):
    """``(flat table, classes, tickets per class, index type)``: the authors' int16 table, or
    ``table`` ``(K, N)`` in the smallest integer type that holds ``K N`` and ``n_types``."""
    if table is None:
        return _TICKET_TOKENS_INT16, NUM_CLASSES, TICKETS, np.int16
    table = np.asarray(table)
    K, N = table.shape
    need = max(K * N, n_types)
    itype = next(t for t in (np.int16, np.int32, np.int64) if need <= int(np.iinfo(t).max) + 1)
    return table.reshape(-1).astype(itype), K, N, itype


def sample_fig2_batches(rng: np.random.Generator, n_batches: int, batch_size: int,
                        seq_len: int = _setting.SEQ_LEN) -> Batch:
    """Draw ``n_batches`` Figure-2 batches (class uniform per sequence).

    The generator is consumed in a fixed order (classes of all batches, then
    the context tickets, :func:`draw_fig2_tickets`), so the result depends only
    on the generator state and the arguments.  Returns a :class:`Batch` with leading shape
    ``(n_batches, batch_size)``; the query token is included in ``counts``.
    """
    n_batches = check_int("n_batches", n_batches, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    seq_len = check_int("seq_len", seq_len, 3)
    classes, tickets = draw_fig2_tickets(rng, n_batches, batch_size, seq_len)
    return fig2_batch_from_tickets(classes, tickets)


def draw_fig2_tickets(rng: np.random.Generator, n_batches: int, batch_size: int,
                      seq_len: int = _setting.SEQ_LEN):
    """The random draws of :func:`sample_fig2_batches`: ``(classes, tickets)``, shapes
    ``(n_batches, batch_size)`` and ``(n_batches, batch_size, seq_len - 2)``.

    Cheap per generator; :func:`fig2_batch_from_tickets` turns the draws of many
    generators (stacked along any axis) into counts in one pass."""
    classes = rng.integers(0, NUM_CLASSES, size=(n_batches, batch_size))
    return classes, draw_tickets(rng, classes.shape, seq_len)


def fig2_batch_from_tickets(classes, tickets, out=None) -> Batch:
    """The Figure-2 :class:`Batch` of drawn ``classes`` ``(...)`` and ``tickets`` ``(..., T)``
    (``out``: optional buffer for the counts, see :func:`counts_from_tickets`)."""
    query = QUERY_TOKENS[classes]
    return Batch(counts_from_tickets(classes, tickets, query, out), query, LABEL_TOKENS[classes], classes)


def sample_fig3_batches(rng: np.random.Generator, n_batches: int, batch_size: int = 128,
                        seq_len: int = _setting.SEQ_LEN) -> Batch:
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
    last = LABEL_TOKENS[classes]
    counts = counts_from_tickets(classes, draw_tickets(rng, classes.shape, seq_len), last)
    return Batch(counts, last, QUERY_TOKENS[classes], classes)


def sample_fig2_sequences(rng: np.random.Generator, batch_size: int, seq_len: int = _setting.SEQ_LEN):
    """Explicit Figure-2 sequences, position by position.

    Returns ``(tokens, target)``: ``tokens`` ``(batch_size, seq_len - 1)`` int
    token ids (``seq_len - 2`` context tokens drawn i.i.d. from the class
    distribution as uniform tickets, then the query token), ``target``
    ``(batch_size,)`` the label token.  This is the authors' layout literally;
    it consumes the generator like ``sample_fig2_batches(rng, 1, batch_size,
    seq_len)``, whose counts are exactly :func:`sequences_to_counts` of these
    tokens.
    """
    batch_size = check_int("batch_size", batch_size, 1)
    seq_len = check_int("seq_len", seq_len, 3)
    classes, tickets = draw_fig2_tickets(rng, 1, batch_size, seq_len)
    classes, tickets = classes[0], tickets[0]
    tokens = np.empty((batch_size, seq_len - 1), dtype=np.int64)
    tokens[:, :-1] = tickets_to_tokens(classes, tickets)
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
