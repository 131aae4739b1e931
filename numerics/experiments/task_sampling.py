r"""Sampled versions of the engine's tasks: SGD on any task the engine describes.

The Figure-2 experiments train on the authors' task (:mod:`numerics.experiments.data`).
This module gives every task of the derivation engine
(:class:`derivations.engine.task.Task`, by name from
:func:`derivations.tasks.get_task`, with ``--params``) a *sampled* version,
built from the engine's own :class:`~derivations.engine.task.TaskInstance`
(one definition: no number is retyped here).

Sampled task
------------
Let the instance have :math:`K` classes, :math:`T` token types (the first
:math:`d` embedded one-hot, scaled by :math:`1/\sqrt b`; the others zero
vectors), multiplicities :math:`c_{kt}` of type :math:`t` among class
:math:`k`'s attended positions, query type :math:`q_k`, output
:math:`y_k` (the class index for ``outputs="classes"``, the label token's
dimension for ``"vocabulary"``).  The context multiplicities are

.. math::

    \mu_{kt} = c_{kt} - [\text{query in context}]\,[t = q_k],

and a class-:math:`k` sequence of length :math:`L` (``seq_len``: context,
query and label, as in the authors' layout) holds :math:`L - 2` context tokens
drawn i.i.d. with probabilities :math:`p_{kt} = \mu_{kt} / \sum_u \mu_{ku}`;
the query attends over the context, plus itself when the task puts it in
context.  The class is uniform per sequence.  The expected counts are

.. math:: \bar n_k = (L - 2)\, p_k + [\text{query in context}]\, e_{q_k},

which at the task's own length :math:`L_0 = \sum_t \mu_{kt} + 2` are exactly
the engine's counts :math:`c_k` (:func:`expected_counts`).

Which tasks can be sampled
--------------------------
:func:`sampled_task` builds the sampled version, else raises ``ValueError``.
At the given parameter values every :math:`\mu_{kt}` must be a nonnegative
rational :math:`a_{kt}/D` with a common denominator :math:`D` such that the
ticket table of a class, :math:`N = D \sum_t \mu_{kt}` tickets, has at most
:data:`MAX_TICKETS` entries, the same positive total for every class, and the
vocabulary at most :data:`MAX_TYPES` types.  Then token :math:`t` owns
:math:`a_{kt}` of the :math:`N` equally likely tickets of class :math:`k`, and
a context token is a uniform ticket looked up in that table: exactly
:math:`p_{kt}` (the authors' sampler does the same with 155 tickets).  Every
built-in task can be sampled at rational parameter values: ``paper`` and
``query-in-context`` have :math:`\mu = m` for :math:`r_k` and :math:`n` for
the zero-embedded irrelevant type, the ``shared-irrelevant`` variants
:math:`n / n_c` for each of the :math:`n_c` shared types (rational for integer
:math:`n_c`), and the ``authors`` task is the default path of
:mod:`numerics.experiments.data` itself.  Values such as ``m=0.1234567`` (a
denominator above :math:`10^6`) or an irrational multiplicity are refused.

>>> st = sampled_task("paper", {"M": 3})
>>> st.K, st.T, st.d, st.n_out, st.tickets, st.own_seq_len
(3, 7, 6, 3, 55, 57)
>>> expected_counts(st, st.own_seq_len)[0].tolist()
[0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 50.0]
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..validation import check_int
from .data import Batch, counts_from_tickets

__all__ = ["DEFAULT_TASK", "MAX_TICKETS", "MAX_TYPES", "SampledTask", "TaskBatch", "task_parameter_names",
           "canonical_params", "is_default", "resolve", "sampled_task", "expected_counts", "draw_tickets",
           "batch_from_tickets", "sample_batches", "theory_instance", "add_task_arguments", "task_from_args",
           "seq_len_for"]

#: The task of the Figure-2 experiments when none is named: the authors' (today's code path).
DEFAULT_TASK = "authors"
#: Largest ticket table of one class (tickets = common denominator x total multiplicity).
MAX_TICKETS = 10 ** 6
#: Largest vocabulary (token types) the sampled SGD model takes.
MAX_TYPES = 2048
_MAX_DENOMINATOR = 10 ** 6


def task_parameter_names(name: str) -> tuple:
    """The ``--params`` names a built-in task takes: the symbols its counts, scales and
    class number depend on (``m, n, b, M`` and its own, e.g. ``n_c``); ``()`` for ``authors``."""
    from derivations.tasks import get_task

    return tuple(sorted(str(s) for s in get_task(name).free_symbols()))


def _number(value):
    """A parameter value as an int when integral, else a float (a canonical, JSON-safe form)."""
    if isinstance(value, bool):
        raise ValueError(f"parameter values must be numbers; got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"parameter values must be numbers; got {value!r}") from None
    return int(v) if math.isfinite(v) and v == int(v) and abs(v) <= 2 ** 53 else v


def canonical_params(params) -> tuple:
    """``{name: value}`` or pairs as sorted ``((name, number), ...)`` (how a run stores them)."""
    items = params.items() if isinstance(params, dict) else (params or ())
    out = {}
    for pair in items:
        name, value = pair
        if name in out:
            raise ValueError(f"task parameter {name} is given twice")
        out[str(name)] = _number(value)
    return tuple(sorted(out.items()))


def is_default(task, params=()) -> bool:
    """Whether ``task``/``params`` name the authors' task on today's code path."""
    return task in (None, DEFAULT_TASK) and not params


@dataclass(frozen=True, eq=False)
class SampledTask:
    """A task's sampled version (see the module docstring); arrays are read-only.

    Attributes
    ----------
    name : str
    key : str
        What identifies the task in stored settings: a built-in task's name, else its
        canonical text (:func:`derivations.tasks.task_key`; ``--task`` reads it back).
    params : tuple
        :func:`canonical_params` of the values given.
    K, T, d, n_out : int
        Classes, token types, embedded types (the first ``d``), outputs.
    score_scale : float
        :math:`\\gamma`, the engine's score scale.
    score_multiplier : float
        :math:`\\gamma / b`: the score of type ``t < d`` is ``score_multiplier * A[q, t]``.
    value_multiplier : float
        :math:`1/\\sqrt b`: the context vector is ``value_multiplier * a[:d]``.
    query, label : ndarray of int, shape (K,)
    relevant : ndarray of bool, shape (K, T)
    query_in_context : bool
    ticket_tokens : ndarray of int, shape (K, tickets)
        Token type of every ticket of each class.
    probabilities : ndarray, shape (K, T)
        :math:`p_{kt}`.
    tickets : int
    own_seq_len : int or None
        :math:`L_0` (None when the total multiplicity is not an integer).
    token_names : tuple of str
    """
    name: str
    key: str
    params: tuple
    K: int
    T: int
    d: int
    n_out: int
    score_scale: float
    score_multiplier: float
    value_multiplier: float
    query: np.ndarray
    label: np.ndarray
    relevant: np.ndarray
    query_in_context: bool
    ticket_tokens: np.ndarray
    probabilities: np.ndarray
    tickets: int
    own_seq_len: int | None
    token_names: tuple


def _embedding_scale(inst, name) -> float:
    """The common scale of the embedded one-hot rows (the engine's layout: embedded first)."""
    E = np.asarray(inst.embeddings, dtype=float).reshape(len(inst.token_names), inst.d)
    d = inst.d
    scale = E[0, 0] if d else 1.0
    expected = np.zeros_like(E)
    expected[np.arange(d), np.arange(d)] = scale
    if d == 0 or scale <= 0 or not np.array_equal(E, expected):
        raise ValueError(f"task {name!r} cannot be sampled: its embeddings are not one-hot rows of one "
                         "scale followed by zero rows")
    return float(scale)


def _tickets(mu, name) -> tuple:
    """``(ticket counts (K, T) int, tickets per class, total multiplicity as a Fraction)`` of the
    multiplicities ``mu`` (K, T), or ValueError naming why they cannot be sampled."""
    fracs = []
    for row in mu:
        out = []
        for x in row:
            f = Fraction(float(x)).limit_denominator(_MAX_DENOMINATOR)
            if float(f) != float(x) or f < 0:
                raise ValueError(f"task {name!r} cannot be sampled: multiplicity {float(x)!r} is not a nonnegative "
                                 f"rational with a denominator <= {_MAX_DENOMINATOR}")
            out.append(f)
        fracs.append(out)
    D = math.lcm(*(f.denominator for row in fracs for f in row))
    counts = np.array([[int(f * D) for f in row] for row in fracs], dtype=np.int64)
    totals = counts.sum(axis=1)
    if totals.min() <= 0 or totals.max() != totals.min():
        raise ValueError(f"task {name!r} cannot be sampled: its classes' contexts must hold the same positive "
                         f"number of tokens; totals {sorted(set((totals / D).tolist()))}")
    if totals[0] > MAX_TICKETS:
        raise ValueError(f"task {name!r} cannot be sampled: its ticket table needs {int(totals[0])} tickets per "
                         f"class (common denominator {D}), more than {MAX_TICKETS}")
    return counts, int(totals[0]), Fraction(int(totals[0]), D)


def _check_values(name, params) -> dict:
    """``{name: value}`` checked against the task's parameter names (ValueError naming the valid ones)."""
    allowed = task_parameter_names(name)           # ValueError naming the valid tasks for an unknown one
    values = dict(params)
    for key in values:
        if key not in allowed:
            raise ValueError(f"task {name!r} has no parameter {key!r} (its parameters: "
                             f"{', '.join(allowed) if allowed else 'none'})")
    return values


@functools.lru_cache(maxsize=64)
def _build(name: str, params: tuple) -> SampledTask:
    from derivations.tasks import get_task

    return _from_task(get_task(name), params)


def _from_task(task, params: tuple) -> SampledTask:
    """The sampled version of the engine ``Task`` at ``params`` (ValueError if it cannot be sampled)."""
    name = task.name
    inst = task.instance(values=dict(params) or None)
    K, T, d = inst.M, len(inst.token_names), inst.d
    if T > MAX_TYPES:
        raise ValueError(f"task {name!r} cannot be sampled: {T} token types, more than {MAX_TYPES}")
    scale = _embedding_scale(inst, name)
    query = np.asarray(inst.query, dtype=np.intp)
    mu = np.array(inst.counts, dtype=float)
    if task.query_in_context:
        mu[np.arange(K), query] -= 1.0
    counts, n_tickets, total = _tickets(mu, name)
    table = np.array([np.repeat(np.arange(T), row) for row in counts], dtype=np.intp)
    arrays = dict(query=query, label=np.asarray(inst.label, dtype=np.intp),
                  relevant=np.asarray(inst.relevant, dtype=bool), ticket_tokens=table,
                  probabilities=counts / float(n_tickets))
    for a in arrays.values():
        a.flags.writeable = False
    from derivations.tasks import task_key
    return SampledTask(name=name, key=task_key(task), params=params, K=K, T=T, d=d, n_out=int(inst.n_out),
                       score_scale=float(inst.score_scale),
                       score_multiplier=float(inst.score_scale) * scale * scale, value_multiplier=scale,
                       query_in_context=bool(task.query_in_context), tickets=n_tickets,
                       own_seq_len=int(total) + 2 if total.denominator == 1 else None,
                       token_names=tuple(inst.token_names), **arrays)


def sampled_task(name, params=()) -> SampledTask:
    """The sampled version of built-in task ``name`` at parameter values ``params``
    (``{name: value}`` or pairs; missing ones take the task's defaults).  ``name`` may
    also be a :class:`derivations.engine.task.Task` object (a task you built; not cached).

    Raises
    ------
    ValueError
        Unknown task or parameter, an invalid value (the engine's message), or a task
        that cannot be sampled at these values (see the module docstring); ``authors``
        is refused here: it is the default path (:mod:`numerics.experiments.data`).
    """
    params = canonical_params(params)
    if not isinstance(name, str):
        from derivations.engine import Task

        if not isinstance(name, Task):
            raise ValueError(f"task must be a task name or a derivations Task; got {name!r}")
        return _from_task(name, params)
    _check_values(name, params)
    if name == DEFAULT_TASK:
        raise ValueError(f"task {DEFAULT_TASK!r} is sampled by numerics.experiments.data (the default path)")
    return _build(name, params)


def resolve(task, params=()) -> tuple:
    """``(SampledTask or None, canonical params)`` of a task name and parameter values: None
    for the authors' task on its own code path (:func:`is_default`), else :func:`sampled_task`
    (ValueError if the task is unknown or cannot be sampled)."""
    params = canonical_params(params)
    if is_default(task, params):
        return None, params
    return sampled_task(task, params), params


def expected_counts(st: SampledTask, seq_len: int) -> np.ndarray:
    r"""Expected count vectors :math:`\bar n_k = (L-2) p_k + [\text{query in context}] e_{q_k}`, ``(K, T)``."""
    seq_len = check_int("seq_len", seq_len, 3)
    counts = (seq_len - 2) * st.probabilities
    if st.query_in_context:
        counts[np.arange(st.K), st.query] += 1.0
    return counts


#: Batches of a sampled task: :class:`~numerics.experiments.data.Batch`, counts over the task's types.
TaskBatch = Batch


def draw_tickets(st: SampledTask, rng, n_batches: int, batch_size: int, seq_len: int):
    """The random draws of :func:`sample_batches`: classes ``(n_batches, batch_size)`` (uniform),
    then context tickets ``(n_batches, batch_size, seq_len - 2)`` int32 uniform on ``[0, tickets)``."""
    classes = rng.integers(0, st.K, size=(n_batches, batch_size))
    return classes, rng.integers(0, st.tickets, size=classes.shape + (seq_len - 2,), dtype=np.int32)


def batch_from_tickets(st: SampledTask, classes, tickets) -> TaskBatch:
    """Counts of drawn ``classes`` ``(...)`` and ``tickets`` ``(..., L-2)``: one table look-up and
    one :func:`numpy.bincount` for all sequences (:func:`numerics.experiments.data.counts_from_tickets`
    on the task's ticket table), plus the query where it is in context."""
    classes = np.asarray(classes)
    query = st.query[classes]
    counts = counts_from_tickets(classes, tickets, query if st.query_in_context else None,
                                 table=st.ticket_tokens, n_types=st.T)
    return TaskBatch(counts, query, st.label[classes], classes)


def sample_batches(st: SampledTask, rng, n_batches: int, batch_size: int, seq_len: int) -> TaskBatch:
    """``n_batches`` batches of ``batch_size`` sequences of length ``seq_len`` (>= 3)."""
    n_batches = check_int("n_batches", n_batches, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    seq_len = check_int("seq_len", seq_len, 3)
    return batch_from_tickets(st, *draw_tickets(st, rng, n_batches, batch_size, seq_len))


def theory_instance(st: SampledTask, seq_len: int):
    """The expected-count task as a :class:`numerics.model.instance.TaskInstance` whose
    factorized circuits have ``d`` hidden units (the SGD model's square factors), at ``seq_len``."""
    from ..model import TaskInstance

    E = np.zeros((st.T, st.d))
    E[np.arange(st.d), np.arange(st.d)] = st.value_multiplier
    return TaskInstance(E, expected_counts(st, seq_len), st.query, st.label, st.n_out, st.relevant,
                        score_scale=st.score_scale, h_QK=st.d, h_OV=st.d, name=st.name)


# --------------------------------------------------------------------------- command line
def add_task_arguments(parser) -> None:
    """``--task NAME`` and ``--params name=value,...`` (for ``fig2``, ``sweep``, ``predict``)."""
    parser.add_argument("--task", default=DEFAULT_TASK, metavar="NAME",
                        help="the engine task to train / predict (derivations.tasks; default authors, the "
                             "authors' task); the paper's task and its variants are sampled by "
                             "numerics.experiments.task_sampling")
    parser.add_argument("--params", default=None, metavar="NAME=VALUE[,...]",
                        help="the task's parameter values (e.g. m=5,n=50,b=50,M=20,n_c=2; missing ones take "
                             "the task's defaults)")


def task_from_args(args) -> tuple:
    """``(SampledTask or None, canonical params)`` of ``--task``/``--params``; one-line
    :class:`~derivations.core.cli.UsageError` for an unknown task or parameter, a bad
    value or a task that cannot be sampled (before any work)."""
    from derivations.core.cli import UsageError, parse_number, parse_params

    raw = {} if args.params is None else parse_params(args.params)
    values = {k: parse_number(f"--params {k}", v) for k, v in raw.items()}
    try:
        return resolve(args.task, values)
    except ValueError as exc:
        raise UsageError(f"--task {args.task}: {exc}") from None


def seq_len_for(st, text, default: int = 64) -> int:
    """``--seq-len``: the text given, else the task's own length (``default`` for the authors')."""
    from derivations.core.cli import UsageError, parse_int

    if text is not None:
        return parse_int("--seq-len", text, 3)
    if st is None:
        return default
    if st.own_seq_len is None:
        raise UsageError(f"--seq-len is required for task {st.name!r} (its total multiplicity is not an integer)")
    return st.own_seq_len
