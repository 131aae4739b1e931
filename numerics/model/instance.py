r"""Concrete task instances: the numbers the full-matrix model of a task needs.

A *task instance* (:class:`TaskInstance`) is everything the population loss of a
single-layer, position-free attention model needs, with concrete numbers:

* ``T`` token types with embeddings :math:`x_t \in \mathbb R^d` (rows of
  ``embeddings``; a row may be zero),
* ``K`` sequence kinds ("classes") with weights :math:`\pi_k` (default
  :math:`1/K`); kind :math:`k` has the query type :math:`q_k`, the label
  :math:`y_k \in \{0..n_{\rm out}-1\}` and the multiplicities
  :math:`c_{kt} \ge 0` of every type among the attended positions (real
  numbers: expected counts are fine; the query's own position is counted there
  when the query attends to itself),
* a score scale :math:`\gamma` (1 for the paper's model, :math:`1/\sqrt{50}` for
  the authors' experiments) and the set of *relevant* types of each kind.

:func:`paper_instance` builds the paper's task directly, :func:`instance_of_task`
any task of the symbolic engine (:mod:`derivations.tasks`); the model on an
instance is :class:`numerics.model.attention.TaskModel`.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from derivations.core.vocabulary import check_positive

from ..validation import check_int

__all__ = ["TaskInstance", "paper_instance", "instance_of_task"]


@dataclass(frozen=True, eq=False)
class TaskInstance:
    r"""A concrete task: embeddings, per-kind multiplicities, queries, labels.

    Parameters
    ----------
    embeddings : array_like, shape (T, d)
        Row ``t`` is the embedding of token type ``t`` (finite).
    counts : array_like, shape (K, T)
        Multiplicity :math:`c_{kt} \ge 0` of type ``t`` among the positions the
        query of kind ``k`` attends to (finite, at least one positive per row).
    query : array_like of int, shape (K,)
        Token type of each kind's query.
    label : array_like of int, shape (K,)
        Output index of each kind's target, in ``[0, n_out)``.
    n_out : int
        Output dimension (>= 2).
    relevant : array_like of bool, shape (K, T) or (T,)
        Relevant types (per kind, or the same for all kinds); ``alpha`` is the
        attention on them.
    score_scale : float
        :math:`\gamma > 0` multiplying every score.
    weights : array_like, shape (K,), optional
        Kind weights :math:`\pi_k > 0` (normalized to sum 1); default uniform.
    h_QK, h_OV : int, optional
        Inner dimensions of factorized circuits (default ``d`` and ``n_out``).
    name : str
    """

    embeddings: np.ndarray
    counts: np.ndarray
    query: np.ndarray
    label: np.ndarray
    n_out: int
    relevant: np.ndarray
    score_scale: float = 1.0
    weights: np.ndarray | None = None
    h_QK: int | None = None
    h_OV: int | None = None
    name: str = "custom"

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        E = np.array(self.embeddings, dtype=float)
        if E.ndim != 2 or E.size == 0 or not np.all(np.isfinite(E)):
            raise ValueError(f"embeddings must be a finite (T, d) array, got shape {E.shape}")
        T, d = E.shape
        C = np.array(self.counts, dtype=float)
        if C.ndim != 2 or C.shape[1] != T:
            raise ValueError(f"counts must have shape (K, T={T}), got {C.shape}")
        if not np.all(np.isfinite(C)) or np.any(C < 0) or np.any(C.sum(axis=1) <= 0):
            raise ValueError("counts must be finite, >= 0, with a positive entry in every row")
        K = C.shape[0]
        check_int("n_out", self.n_out, 2)
        q = np.asarray(self.query)
        y = np.asarray(self.label)
        for nm, arr, hi in (("query", q, T), ("label", y, int(self.n_out))):
            if arr.shape != (K,) or not np.issubdtype(arr.dtype, np.integer) \
                    or np.any(arr < 0) or np.any(arr >= hi):
                raise ValueError(f"{nm} must be K={K} integers in [0, {hi}), got {arr!r}")
        R = np.asarray(self.relevant, dtype=bool)
        if R.shape == (T,):
            R = np.broadcast_to(R, (K, T))
        if R.shape != (K, T):
            raise ValueError(f"relevant must have shape (K, T)=({K}, {T}) or (T,), got {R.shape}")
        w = np.full(K, 1.0 / K) if self.weights is None else np.array(self.weights, dtype=float)
        if w.shape != (K,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"weights must be K={K} finite numbers > 0")
        w = w / w.sum()
        for nm in ("h_QK", "h_OV"):
            v = getattr(self, nm)
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral)
                                  or v < 1):
                raise ValueError(f"{nm} must be a positive integer, got {v!r}")
        set_("score_scale", check_positive("score_scale", self.score_scale))
        set_("h_QK", d if self.h_QK is None else int(self.h_QK))
        set_("h_OV", int(self.n_out) if self.h_OV is None else int(self.h_OV))
        set_("n_out", int(self.n_out))
        for nm, arr in (("embeddings", E), ("counts", C), ("query", q.astype(int)),
                        ("label", y.astype(int)), ("relevant", np.array(R)), ("weights", w)):
            arr.flags.writeable = False
            set_(nm, arr)

    @property
    def K(self) -> int:
        """Number of sequence kinds (classes)."""
        return self.counts.shape[0]

    @property
    def T(self) -> int:
        """Number of token types."""
        return self.embeddings.shape[0]

    @property
    def d(self) -> int:
        """Embedding dimension."""
        return self.embeddings.shape[1]


def paper_instance(M=20, m=5.0, n=50.0, b=50.0) -> TaskInstance:
    r"""The paper's task as a :class:`TaskInstance` (independent of the engine).

    Types: queries :math:`q_k` (:math:`e_k/\sqrt b`), relevant tokens :math:`r_k`
    (:math:`e_{M+k}/\sqrt b`), one irrelevant type (zero embedding); class
    :math:`k` attends to ``m`` copies of :math:`r_k` and ``n`` irrelevant tokens.

    Parameters
    ----------
    M : int
        Number of classes (>= 2).
    m, n, b : float
        Relevant / irrelevant token counts and embedding scale (finite, > 0).

    Returns
    -------
    TaskInstance

    Raises
    ------
    ValueError
        ``M`` not an integer >= 2, or ``m``, ``n``, ``b`` not finite and > 0.
    """
    check_int("M", M, 2)
    m, n, b = (check_positive(k, v) for k, v in (("m", m), ("n", n), ("b", b)))
    d, T = 2 * M, 2 * M + 1
    E = np.zeros((T, d))
    E[np.arange(d), np.arange(d)] = 1.0 / math.sqrt(b)
    C = np.zeros((M, T))
    C[np.arange(M), M + np.arange(M)] = m
    C[:, 2 * M] = n
    R = np.zeros((M, T), dtype=bool)
    R[np.arange(M), M + np.arange(M)] = True
    return TaskInstance(E, C, np.arange(M), np.arange(M), M, R, 1.0, h_QK=M, h_OV=M,
                        name="paper")


def instance_of_task(task, M=None, **values) -> TaskInstance:
    r"""The concrete instance of an engine task as a :class:`TaskInstance`.

    Parameters
    ----------
    task : str or derivations.engine.Task
        A built-in task name (:func:`derivations.tasks.get_task`) or a user-built ``Task``.
    M : int, optional
        Number of classes (default: the task's).
    **values
        Parameter values (``m, n, b, n_c, ...``); missing ones take the task's defaults.

    Returns
    -------
    TaskInstance

    Raises
    ------
    ValueError
        An unknown task or parameter, or a value the task refuses.

    >>> inst = instance_of_task("shared-irrelevant", M=2, n_c=2)
    >>> inst.d, inst.n_out, inst.counts[0].tolist()
    (6, 2, [0.0, 0.0, 5.0, 0.0, 25.0, 25.0])
    """
    from derivations.engine import Task  # the description only; no derivation runs
    from derivations.tasks import get_task

    if isinstance(task, str):
        task = get_task(task)
    elif not isinstance(task, Task):
        raise ValueError(f"task must be a task name or a derivations.engine.Task, got {task!r}")
    raw = task.instance(M=M, values=values or None)
    return TaskInstance(np.asarray(raw.embeddings, dtype=float), np.asarray(raw.counts, dtype=float),
                        np.asarray(raw.query, dtype=int), np.asarray(raw.label, dtype=int),
                        int(raw.n_out), np.asarray(raw.relevant, dtype=bool),
                        score_scale=float(raw.score_scale), h_QK=int(raw.h_QK), h_OV=int(raw.h_OV),
                        name=task.name)
