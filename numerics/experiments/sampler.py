r"""The sampler of every sampled task (:class:`numerics.experiments.task_sampling.SampledTask`).

Counts instead of positions
---------------------------
The models have no positional information, so a sequence enters only through
its count vector over the :math:`T` types (context, plus the query where it is in
context).  A context token is a uniform integer ticket (one
``Generator.integers`` call for a whole epoch, :func:`draw_tickets`) looked up in
the class's ticket table; the tickets of many sequences -- of several seeds, each
drawn from its own generator -- become counts in one table look-up and one
:func:`numpy.bincount` (:func:`counts_from_tickets`).  All randomness comes from a
caller-supplied :class:`numpy.random.Generator`, so a run is a deterministic
function of its seed.

>>> import numpy as np
>>> from numerics.experiments.task_sampling import AUTHORS
>>> b = sample_batches(AUTHORS, np.random.default_rng(0), 2, 3, 64)
>>> b.counts.shape, b.query.shape, b.target.shape
((2, 3, 50), (2, 3), (2, 3))
>>> bool(np.all(b.counts.sum(-1) == 63))
True
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..validation import check_int

__all__ = ["EXACT_COUNT_DTYPES", "Batch", "draw_context", "draw_tickets", "counts_from_tickets",
           "batch_from_tickets", "sample_batches"]

#: Count dtypes :func:`counts_from_tickets` can write into, with the largest count each holds exactly.
EXACT_COUNT_DTYPES = {np.dtype(np.float64): 2 ** 53, np.dtype(np.float32): 2 ** 24,
                      np.dtype(np.uint16): np.iinfo(np.uint16).max}
#: Tickets per chunk of :func:`counts_from_tickets` (its scratch arrays stay in cache).
_CHUNK_TICKETS = 2 ** 15


class Batch(NamedTuple):
    """A stack of batches: ``counts`` ``(..., B, T)`` (context plus the last input token where it
    is attended), ``query`` ``(..., B)`` the last input token, ``target`` ``(..., B)`` the output to
    predict, ``label_class`` ``(..., B)`` the class."""

    counts: np.ndarray
    query: np.ndarray
    target: np.ndarray
    label_class: np.ndarray


def draw_context(st, rng, shape, seq_len: int) -> np.ndarray:
    """The context tickets of sequences of leading ``shape``: ``shape + (seq_len - 2,)`` of
    the task's ``ticket_dtype``
    (:class:`~numerics.experiments.task_sampling.SampledTask`), uniform on ``[0, tickets)``, one
    ``Generator.integers`` call.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    rng : numpy.random.Generator
    shape : tuple of int
    seq_len : int

    Returns
    -------
    ndarray
    """
    return rng.integers(0, st.tickets, size=tuple(shape) + (seq_len - 2,), dtype=st.ticket_dtype)


def draw_tickets(st, rng, n_batches: int, batch_size: int, seq_len: int):
    """The random draws of :func:`sample_batches`: classes ``(n_batches, batch_size)`` (uniform),
    then their context tickets (:func:`draw_context`).

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    rng : numpy.random.Generator
    n_batches, batch_size, seq_len : int

    Returns
    -------
    classes, tickets : ndarray
    """
    classes = rng.integers(0, st.K, size=(n_batches, batch_size))
    return classes, draw_context(st, rng, classes.shape, seq_len)


def _ticket_table(table, n_types):
    """``(flat table, classes, tickets per class, index type)``: ``table`` ``(K, N)`` in the smallest
    integer type that holds ``K N`` and ``n_types``."""
    table = np.asarray(table)
    K, N = table.shape
    need = max(K * N, n_types)
    itype = next(t for t in (np.int16, np.int32, np.int64) if need <= int(np.iinfo(t).max) + 1)
    return table.reshape(-1).astype(itype), K, N, itype


def counts_from_tickets(st, classes, tickets, last, out=None):
    """Count vectors ``(..., T)`` of the context tickets ``(..., L)`` of sequences of class
    ``classes`` ``(...)``, plus one count of ``last`` ``(...)`` (None: nothing added).

    A table look-up and a :func:`numpy.bincount` for all sequences (any leading shape, e.g.
    steps x seeds x batch), in chunks of about ``_CHUNK_TICKETS`` tickets with scratch
    arrays allocated once: the counts are exact integers, so the result does not depend on
    the chunking, and the temporaries stay in cache.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    classes : array_like of int
    tickets : array_like of int
    last : array_like of int or None
    out : ndarray, optional
        A C-contiguous array of the result's shape to write into, of a dtype of
        :data:`EXACT_COUNT_DTYPES` that holds counts up to ``L + 1`` exactly (the trainer
        reuses one ``uint16`` buffer across epochs); default a new float64 array.

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        Tickets or classes out of range, or an unfit ``out``.
    """
    n_types = st.T
    flat_table, n_classes, n_tickets, itype = _ticket_table(st.ticket_tokens, n_types)
    classes = np.asarray(classes)
    n = classes.size
    tickets = np.asarray(tickets).reshape(n, -1)
    if tickets.size and (tickets.min() < 0 or tickets.max() >= n_tickets):
        raise ValueError(f"tickets must lie in [0, {n_tickets}), got range [{tickets.min()}, {tickets.max()}]")
    if n and (classes.min() < 0 or classes.max() >= n_classes):
        raise ValueError(f"classes must lie in [0, {n_classes}), got range [{classes.min()}, {classes.max()}]")
    shape = classes.shape + (n_types,)
    L = tickets.shape[1]
    if out is None:
        out = np.empty(shape)
    elif (out.shape != shape or not out.flags.c_contiguous
          or EXACT_COUNT_DTYPES.get(out.dtype, 0) < L + 1):
        raise ValueError(f"out must be a C-contiguous array of shape {shape} and a dtype that holds "
                         f"counts up to {L + 1} exactly ({', '.join(map(str, EXACT_COUNT_DTYPES))}), got "
                         f"{out.dtype} {out.shape}")
    result, out = out, out.reshape(-1)
    # sequences per chunk: cache-sized, and few enough that "row * n_types + token" fits in the
    # index type, so the look-up, the row offsets and the counting index stay small integers
    c = max(1, min(n, _CHUNK_TICKETS // max(L, 1), (int(np.iinfo(itype).max) + 1) // n_types))
    base = (classes.reshape(-1, 1) * n_tickets).astype(itype)
    idx = np.empty((c, L), dtype=itype)
    tok = np.empty((c, L), dtype=itype)
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


def batch_from_tickets(st, classes, tickets, out=None) -> Batch:
    """The :class:`Batch` of drawn ``classes`` ``(...)`` and ``tickets`` ``(..., L-2)``.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    classes, tickets : array_like of int
        As drawn by :func:`draw_tickets` (several generators' draws may be stacked).
    out : ndarray, optional
        Buffer for the counts (:func:`counts_from_tickets`).

    Returns
    -------
    Batch
    """
    classes = np.asarray(classes)
    query = st.query[classes]
    counts = counts_from_tickets(st, classes, tickets, query if st.query_in_context else None, out)
    return Batch(counts, query, st.label[classes], classes)


def sample_batches(st, rng, n_batches: int, batch_size: int, seq_len: int) -> Batch:
    """Draw batches of a task (class uniform per sequence; classes first, then the tickets).

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    rng : numpy.random.Generator
    n_batches, batch_size : int
        At least 1.
    seq_len : int
        At least 3.

    Returns
    -------
    Batch
        Leading shape ``(n_batches, batch_size)``.

    Raises
    ------
    ValueError
        A size out of range.
    TypeError
        ``rng`` not a :class:`numpy.random.Generator`.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    n_batches = check_int("n_batches", n_batches, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    seq_len = check_int("seq_len", seq_len, 3)
    return batch_from_tickets(st, *draw_tickets(st, rng, n_batches, batch_size, seq_len))
