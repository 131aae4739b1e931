r"""The sampled tasks the experiments train on: the authors' task and every task of the engine.

A :class:`SampledTask` holds what the sampler, the count model
(:mod:`numerics.experiments.models`), the trainer and the theory read of a task.
The authors' task (``authors``, the default) is built from its one definition,
:mod:`derivations.core.authors_setting`; every other task of the derivation
engine (:class:`derivations.engine.task.Task`, by name from
:func:`derivations.tasks.get_task`, with ``--params``) from the engine's own
:class:`~derivations.engine.instance.TaskInstance` (no number is retyped here).

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
:math:`p_{kt}`.  Every built-in task can be sampled at rational parameter
values: ``paper`` and ``query-in-context`` have :math:`\mu = m` for :math:`r_k`
and :math:`n` for the zero-embedded irrelevant type, the ``shared-irrelevant``
variants :math:`n / n_c` for each of the :math:`n_c` shared types (rational for
integer :math:`n_c`).  Values such as ``m=0.1234567`` (a denominator above
:math:`10^6`) or an irrational multiplicity are refused.

The authors' task
-----------------
:data:`AUTHORS`: 50 one-hot token ids (unscaled, :math:`d = T = n_{out} = 50`),
4 classes; class :math:`k`'s context weights are whole tenths
(:func:`~derivations.core.authors_setting.weight_tenths`, 155 tickets per class),
the query attends over the context and itself, scores are scaled by
:math:`1/\sqrt{50}`, its relevant tokens are the union of every class's
(ids > 9), its tickets are drawn as ``int16`` and its own length is the
published 64.

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

from derivations.core import authors_setting as _authors

from ..validation import check_int

__all__ = ["DEFAULT_TASK", "MAX_TICKETS", "MAX_TYPES", "SampledTask", "AUTHORS",
           "canonical_params", "count_values", "divisor_parameter", "sampled_task", "task_settings",
           "expected_counts", "theory_instance"]

#: The task trained and predicted when none is named: the authors'.
DEFAULT_TASK = "authors"
#: Largest ticket table of one class (tickets = common denominator x total multiplicity).
MAX_TICKETS = 10 ** 6
#: Largest vocabulary (token types) the sampled SGD model takes.
MAX_TYPES = 2048
_MAX_DENOMINATOR = 10 ** 6
_TINY, _HUGE = float(np.finfo(np.float64).tiny), float(np.finfo(np.float64).max)


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
    """Parameter values as sorted ``((name, number), ...)`` (how a run stores them).

    Parameters
    ----------
    params : dict, iterable of (str, float) or None
        ``{name: value}`` or ``(name, value)`` pairs.

    Returns
    -------
    tuple of (str, int or float)

    Raises
    ------
    ValueError
        Not a dict or pairs, a name given twice or a value that is not a number.
    """
    what = "task parameters must be a dict {name: number} or (name, number) pairs"
    if params is not None and not isinstance(params, dict) and (isinstance(params, (str, bytes))
                                                                or not np.iterable(params)):
        raise ValueError(f"{what}; got {params!r}")
    items = params.items() if isinstance(params, dict) else (params or ())
    out = {}
    for pair in items:
        if isinstance(pair, (str, bytes)) or not np.iterable(pair) or len(pair) != 2:
            raise ValueError(f"{what}; got {pair!r} among them")
        name, value = pair
        if name in out:
            raise ValueError(f"task parameter {name} is given twice")
        out[str(name)] = _number(value)
    return tuple(sorted(out.items()))


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
    score_divisor : float
        The score of type ``t < d`` is ``A[q, t] / score_divisor`` (:math:`b/\\gamma` for an
        engine task, :math:`\\sqrt{50}` for the authors'); the others score 0.
    value_multiplier : float
        :math:`1/\\sqrt b`: the context vector is ``value_multiplier * a[:d]``.
    query, label : ndarray of int, shape (K,)
    relevant : ndarray of bool, shape (K, T) or (T,)
        Relevant types of each class, or one mask shared by every class.
    query_in_context : bool
    ticket_tokens : ndarray of int, shape (K, tickets)
        Token type of every ticket of each class.
    ticket_dtype : numpy.dtype
        Integer type of the ticket draws (part of the task's random stream).
    probabilities : ndarray, shape (K, T)
        :math:`p_{kt}`.
    tickets : int
    own_seq_len : int or None
        The task's own sequence length (None when it has none).
    token_names : tuple of str
    engine_state : bool
        Whether the engine's state at a loss answers the task
        (:func:`numerics.experiments.theory.closed_form_attention`).
    """
    name: str
    key: str
    params: tuple
    K: int
    T: int
    d: int
    n_out: int
    score_scale: float
    score_divisor: float
    value_multiplier: float
    query: np.ndarray
    label: np.ndarray
    relevant: np.ndarray
    query_in_context: bool
    ticket_tokens: np.ndarray
    ticket_dtype: np.dtype
    probabilities: np.ndarray
    tickets: int
    own_seq_len: int | None
    token_names: tuple
    engine_state: bool

    def relevant_of(self, classes) -> np.ndarray:
        """The relevant mask of sequences of class ``classes`` ``(...)``: ``(..., T)``, or ``(T,)``
        when one mask serves every class.

        Parameters
        ----------
        classes : array_like of int

        Returns
        -------
        ndarray of bool
        """
        return self.relevant if self.relevant.ndim == 1 else self.relevant[classes]


def _make(name, params, ticket_counts, denominator, *, query, label, relevant, ticket_dtype, **fields):
    """A :class:`SampledTask` of per-class ticket counts ``(K, T)`` of common ``denominator``."""
    ticket_counts = np.asarray(ticket_counts, dtype=np.int64)
    K, T = ticket_counts.shape
    weights = ticket_counts / float(denominator)
    arrays = dict(query=np.asarray(query, dtype=np.intp), label=np.asarray(label, dtype=np.intp),
                  relevant=np.asarray(relevant, dtype=bool),
                  ticket_tokens=np.array([np.repeat(np.arange(T), row) for row in ticket_counts], dtype=np.intp),
                  probabilities=weights / weights.sum(axis=1, keepdims=True))
    for a in arrays.values():
        a.flags.writeable = False
    return SampledTask(name=name, params=params, K=K, T=T, tickets=int(ticket_counts[0].sum()),
                       ticket_dtype=np.dtype(ticket_dtype), **arrays, **fields)


def _authors_task() -> SampledTask:
    """The authors' task (:mod:`derivations.core.authors_setting`; see the module docstring)."""
    S = _authors
    V, K = S.VOCAB, S.NUM_CLASSES
    num, den = S.SCORE_SCALE_SQUARED
    relevant = np.isin(np.arange(V), [v for k in range(K) for v in S.relevant_ids(k)])
    return _make("authors", (), [S.weight_tenths(k) for k in range(K)], 10, query=S.QUERY_TOKENS,
                 label=S.LABEL_TOKENS, relevant=relevant, ticket_dtype=np.int16, d=V, n_out=V,
                 score_scale=1.0 / math.sqrt(den / num), score_divisor=math.sqrt(den / num),
                 value_multiplier=1.0, query_in_context=True, own_seq_len=S.SEQ_LEN,
                 token_names=tuple(str(v) for v in range(V)), engine_state=False, key="authors")


#: The authors' task.
AUTHORS = _authors_task()


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


def _score_divisor(task, gamma, scale) -> float:
    """The score divisor :math:`b/\\gamma = 1/(\\gamma\\,\\text{scale}^2)` of the embedding scale :math:`b`
    (``scale`` :math:`= 1/\\sqrt b`), or ValueError naming ``embedding_scale`` and its range: the scores
    are ``A x (1/divisor)`` (:func:`numerics.experiments.models.forward`), so the divisor must be a normal
    float64 (a subnormal one has lost digits; one that rounds to 0 makes the scores nan)."""
    divisor = 1.0 / (gamma * scale * scale)
    if not _TINY <= divisor <= _HUGE:
        raise ValueError(f"task {task.name!r} cannot be sampled: its score divisor embedding_scale/gamma must be a "
                         f"normal float64 in [{_TINY!r}, {_HUGE!r}], i.e. embedding_scale = {task.embedding_scale} "
                         f"in [{_TINY * gamma!r}, {_HUGE * gamma!r}]; got {task.embedding_scale} = "
                         f"{1.0 / scale / scale!r}")
    return divisor


def _tickets(mu, refused) -> tuple:
    """``(ticket counts (K, T) int, common denominator, total multiplicity as a Fraction)`` of the
    multiplicities ``mu`` (K, T), or ValueError naming why they cannot be sampled (``refused``: the
    message's start, ``task 'x' cannot be sampled at m = 5, ...``)."""
    fracs = []
    for row in mu:
        out = []
        for x in row:
            f = Fraction(float(x)).limit_denominator(_MAX_DENOMINATOR)
            if float(f) != float(x) or f < 0:
                raise ValueError(f"{refused}: multiplicity {float(x)!r} is not a nonnegative "
                                 f"rational with a denominator <= {_MAX_DENOMINATOR}")
            out.append(f)
        fracs.append(out)
    D = math.lcm(*(f.denominator for row in fracs for f in row))
    counts = np.array([[int(f * D) for f in row] for row in fracs], dtype=np.int64)
    totals = counts.sum(axis=1)
    if totals.min() <= 0 or totals.max() != totals.min():
        raise ValueError(f"{refused}: its classes' contexts must hold the same positive "
                         f"number of tokens; totals {sorted(set((totals / D).tolist()))}")
    if totals[0] > MAX_TICKETS:
        raise ValueError(f"{refused}: its ticket table needs {int(totals[0])} tickets per "
                         f"class (common denominator {D}), more than {MAX_TICKETS}")
    return counts, D, Fraction(int(totals[0]), D)


def _check_values(name, params) -> dict:
    """``{name: value}`` checked against the task's parameter names (ValueError naming the valid ones)."""
    from derivations.engine import check_parameter_names
    from derivations.tasks import get_task

    values = dict(params)
    check_parameter_names(get_task(name), values)     # get_task: ValueError naming the valid tasks for an unknown one
    return values


@functools.lru_cache(maxsize=64)
def _build(name: str, params: tuple) -> SampledTask:
    from derivations.tasks import get_task

    return _from_task(get_task(name), params)


def count_values(task, params: tuple) -> str:
    """``M = 20, m = 5, n = 10000000``: the values of the parameters that the task's counts and number of token
    types depend on, the given ``params`` over its defaults, so that a refusal names the values it refuses.

    Parameters
    ----------
    task : derivations.engine.Task
    params : tuple
        ``((name, value), ...)`` given.

    Returns
    -------
    str
    """
    from derivations.core.output import shown_float

    names = {str(s) for g in task.groups for e in (g.multiplicity, g.other_multiplicity, g.types)
             for s in e.free_symbols} | {str(s) for s in task.classes.free_symbols}
    values = {**dict(task.defaults), **dict(params)}
    return ", ".join(f"{k} = {shown_float(values[k])}" for k in sorted(names) if k in values)


def _from_task(task, params: tuple) -> SampledTask:
    """The sampled version of the engine ``Task`` at ``params`` (ValueError if it cannot be sampled)."""
    name = task.name
    inst = task.instance(values=dict(params) or None)
    K, T, d = inst.M, len(inst.token_names), inst.d
    refused = f"task {name!r} cannot be sampled at {count_values(task, params)}"
    if T > MAX_TYPES:
        raise ValueError(f"{refused}: {T} token types, more than {MAX_TYPES}")
    scale = _embedding_scale(inst, name)
    score_divisor = _score_divisor(task, float(inst.score_scale), scale)
    query = np.asarray(inst.query, dtype=np.intp)
    mu = np.array(inst.counts, dtype=float)
    if task.query_in_context:
        mu[np.arange(K), query] -= 1.0
    counts, D, total = _tickets(mu, refused)
    from derivations.tasks import task_key
    return _make(name, params, counts, D, query=query, label=inst.label, relevant=inst.relevant,
                 ticket_dtype=np.int32, d=d, n_out=int(inst.n_out), score_scale=float(inst.score_scale),
                 score_divisor=score_divisor, value_multiplier=scale,
                 query_in_context=bool(task.query_in_context),
                 own_seq_len=int(total) + 2 if total.denominator == 1 else None,
                 token_names=tuple(inst.token_names), engine_state=True, key=task_key(task))


def divisor_parameter(st: SampledTask):
    """``(expression, gamma)``: the task's embedding scale (``"b"``), of which the score divisor is
    ``expression / gamma``, so that a refusal of the divisor names the parameters it comes from; None for a
    task whose embedding scale is a number (the authors' among them).

    Parameters
    ----------
    st : SampledTask

    Returns
    -------
    tuple or None
    """
    from derivations.tasks import get_task

    expression = get_task(st.key).embedding_scale if st.engine_state else None
    return None if expression is None or not getattr(expression, "free_symbols", ()) else (
        str(expression), st.score_scale)


def sampled_task(name=DEFAULT_TASK, params=()) -> SampledTask:
    """The sampled version of a task at parameter values ``params``.

    Parameters
    ----------
    name : str or derivations.engine.task.Task
        ``"authors"`` (:data:`AUTHORS`), a built-in task of the engine, or a
        :class:`derivations.engine.task.Task` you built (not cached).
    params : dict or iterable of (str, float)
        ``{name: value}`` or ``(name, value)`` pairs; missing ones take the task's defaults.

    Returns
    -------
    SampledTask

    Raises
    ------
    ValueError
        Unknown task or parameter, an invalid value (the engine's message), or a task
        that cannot be sampled at these values (see the module docstring).
    """
    params = canonical_params(params)
    if not isinstance(name, str):
        from derivations.engine import Task

        if not isinstance(name, Task):
            raise ValueError(f"task must be a task name or a derivations Task; got {name!r}")
        return _from_task(name, params)
    _check_values(name, params)
    return AUTHORS if name == DEFAULT_TASK else _build(name, params)


def task_settings(st: SampledTask) -> dict:
    """``{"task", "task_params"}`` of a task for a run's or a command's settings; ``{}`` for the
    default task (its settings name no task).

    Parameters
    ----------
    st : SampledTask

    Returns
    -------
    dict
    """
    if st.name == DEFAULT_TASK and not st.params:
        return {}
    return {"task": st.key, "task_params": [list(p) for p in st.params]}


def expected_counts(st: SampledTask, seq_len: int) -> np.ndarray:
    r"""Expected count vectors of the classes.

    Parameters
    ----------
    st : SampledTask
    seq_len : int
        Sequence length (>= 3): context, query and label.

    Returns
    -------
    ndarray, shape (K, T)
        :math:`\bar n_k = (L-2) p_k + [\text{query in context}] e_{q_k}`.

    Raises
    ------
    ValueError
        ``seq_len`` not an integer >= 3.
    """
    seq_len = check_int("seq_len", seq_len, 3)
    counts = (seq_len - 2) * st.probabilities
    if st.query_in_context:
        counts[np.arange(st.K), st.query] += 1.0
    return counts


def theory_instance(st: SampledTask, seq_len: int):
    """The expected-count task for the theory.

    Parameters
    ----------
    st : SampledTask
    seq_len : int

    Returns
    -------
    numerics.model.TaskInstance
        At the expected counts of ``seq_len``, its factorized circuits with ``d`` hidden units
        (the SGD model's square factors).
    """
    from ..model import TaskInstance

    E = np.zeros((st.T, st.d))
    E[np.arange(st.d), np.arange(st.d)] = st.value_multiplier
    return TaskInstance(E, expected_counts(st, seq_len), st.query, st.label, st.n_out, st.relevant,
                        score_scale=st.score_scale, h_QK=st.d, h_OV=st.d, name=st.name)
