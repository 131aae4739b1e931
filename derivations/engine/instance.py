r"""A task with numbers: :class:`~derivations.engine.instance.TaskInstance`, built by :meth:`Task.instance
<derivations.engine.task.Task.instance>`.

Sizes first: the number of token types ``T`` and of count entries ``K x T``
follow from the parameter values alone, and are checked against
:data:`MAX_TYPES` and :data:`MAX_ENTRIES` before any list is built or any
expression substituted per entry (``M=1000`` or ``n_c=1e12`` is refused at
once). Each group's count is then substituted once, and must be a finite
number at most ``2**53`` (``m=1e19`` is refused, not an ``OverflowError``).

>>> from derivations.tasks import get_task
>>> get_task("paper").instance(M=1000)
Traceback (most recent call last):
...
ValueError: task 'paper': M = 1000 gives 2001 token types and 2001000 count entries (K x T); at most 4096 types and 1000000 entries
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp

from ..symbolic.symbols import M
from .checks import MAX_INTEGER

__all__ = ["TaskInstance", "MAX_TYPES", "MAX_ENTRIES", "build_instance", "parameter_values"]

#: Most token types of a concrete instance.
MAX_TYPES = 4096
#: Most entries (classes x token types) of a concrete instance's count table.
MAX_ENTRIES = 10 ** 6


@dataclass(frozen=True)
class TaskInstance:
    """A concrete task (numbers only, plain Python lists; ``numpy.asarray`` them).

    Attributes
    ----------
    M : int
        Number of classes K.
    token_names : list[str]
        Names of the T token types (embedded ones first, in embedding order).
    embeddings : list[list[float]]
        (T, d): row t is the embedding of token type t (zero rows for zero-embedded types).
    counts : list[list[float]]
        (K, T): multiplicity of type t among class k's attended positions
        (including the query when it is in its own context).
    query, label : list[int]
        (K,): class k's query token type and output index.
    relevant : list[list[bool]]
        (K, T): type t is relevant for class k (its attention counts into alpha).
    d, n_out, h_QK, h_OV : int
        Embedding dimension, number of outputs, hidden units of factorized circuits.
    score_scale : float
    hidden_of_class : list[int]
        (K,): the hidden unit of class k (factorized circuits).
    """
    M: int
    token_names: list
    embeddings: list
    counts: list
    query: list
    label: list
    relevant: list
    d: int
    n_out: int
    h_QK: int
    h_OV: int
    score_scale: float
    hidden_of_class: list

    def initial_factors(self, eps: float) -> dict:
        """The paper's structured initialization of factorized circuits, scale ``eps``
        (``{"W_Q", "W_K", "W_O", "W_V"}`` as nested lists):
        ``W_Q[q_k, h_k] = W_K[r_k, h_k] = eps`` for every relevant token r_k,
        ``W_O = eps (I - 11^T/M)`` on the class outputs and hidden units,
        ``W_V[h, r_k] = eps (delta_{h h_k} - 1/M)``. Collapsed circuits start at 0.

        Parameters
        ----------
        eps : float
            The scale.

        Returns
        -------
        dict of str to list of list of float
        """
        K, d = self.M, self.d
        WQ = [[0.0] * self.h_QK for _ in range(d)]
        WK = [[0.0] * self.h_QK for _ in range(d)]
        WO = [[0.0] * self.h_OV for _ in range(self.n_out)]
        WV = [[0.0] * d for _ in range(self.h_OV)]
        for k in range(K):
            hq, ho = self.hidden_of_class[k], self.hidden_of_class[k]
            WQ[_embedding_index(self, self.query[k])][hq] = eps
            for j in range(K):
                WO[self.label[j]][ho] = eps * ((1.0 if j == k else 0.0) - 1.0 / K)
            for t, rel in enumerate(self.relevant[k]):
                if rel and _embedding_index(self, t) is not None:
                    WK[_embedding_index(self, t)][hq] = eps
                    for h in range(K):
                        WV[self.hidden_of_class[h]][_embedding_index(self, t)] = eps * ((1.0 if h == k else 0.0) - 1.0 / K)
        return {"W_Q": WQ, "W_K": WK, "W_O": WO, "W_V": WV}


def _embedding_index(inst, t):
    """The embedding dimension of token type t (None for a zero-embedded type)."""
    row = inst.embeddings[t]
    for i, v in enumerate(row):
        if v != 0:
            return i
    return None


def parameter_values(task, M_value, values) -> dict:
    """``{symbol: SymPy number}`` of every symbol ``task`` uses (and ``M``): the task's
    defaults updated with ``values`` and ``M_value``, each checked by :meth:`Task.validate
    <derivations.engine.task.Task.validate>` (ValueError naming an unknown or invalid one).

    Parameters
    ----------
    task : Task
    M_value : int or None
        Number of classes (None: from ``values`` or the defaults).
    values : dict or None
        Parameter name -> value.

    Returns
    -------
    dict
        ``{sympy.Symbol: number}``.

    Raises
    ------
    ValueError
        If a name is unknown, a value invalid, a fixed number of classes contradicted,
        a symbol the task uses has no value, or the values leave a relevant group without copies.
    """
    table = task.symbols()
    vals = dict(task.defaults)
    for key, v in (values or {}).items():
        if key not in table:
            raise ValueError(f"task {task.name!r}: unknown parameter {key!r} (parameters: {', '.join(table)})")
        vals[key] = v
    if M_value is not None:
        vals["M"] = M_value
    if task.classes.is_Integer:
        if ("M" in (values or {}) or M_value is not None) and task.validate("M", vals["M"]) != task.classes:
            raise ValueError(f"task {task.name!r} has a fixed number of classes, M = {task.classes}")
        vals["M"] = int(task.classes)
    used = task.free_symbols()
    subs = {table[key]: task.validate(key, v) for key, v in vals.items() if table[key] in used or key == "M"}
    missing = sorted(str(s) for s in used if s not in subs)
    if missing:
        raise ValueError(f"task {task.name!r}: give values for {', '.join(missing)}")
    for name in task.relevant:
        count = sp.sympify(task.own_count(task.group(name)))
        if count.xreplace(subs).is_zero:
            shown = ", ".join(f"{s}={int(subs[s]) if subs[s].is_Integer else float(subs[s])}"
                              for s in sorted(count.free_symbols, key=str))
            raise ValueError(f"task {task.name!r}: at {shown} the relevant group {name!r} has no copies in its "
                             f"class's context (multiplicity {count} = 0): its attention alpha would be 0 forever")
    return subs


def _number(task, expr, subs, what, *, integer=False):
    v = sp.sympify(expr).xreplace(subs)
    if v.free_symbols or not v.is_finite or not v.is_real:
        raise ValueError(f"task {task.name!r}: {what} = {expr} has no finite value ({v})")
    if integer and not (v.is_Integer and v >= 1):
        raise ValueError(f"task {task.name!r}: {what} must be a positive integer; got {expr} = {v}")
    if abs(v) > MAX_INTEGER:
        raise ValueError(f"task {task.name!r}: {what} = {expr} is {sp.Float(v, 4)}, more than 2**53")
    return int(v) if integer else float(v)


def _check_size(task, K, types, subs):
    T = sum(K * n if g.per_class else n for g, n in zip(task.groups, types))
    if T > MAX_TYPES or K * T > MAX_ENTRIES:
        given = ", ".join(f"{s} = {v}" for s, v in sorted(subs.items(), key=lambda kv: str(kv[0]))
                          if s.name == "M" or any(s in g.types.free_symbols for g in task.groups))
        raise ValueError(f"task {task.name!r}: {given} gives {T} token types and {K * T} count entries (K x T); "
                         f"at most {MAX_TYPES} types and {MAX_ENTRIES} entries")


def build_instance(task, M_value=None, values=None) -> TaskInstance:
    """The instance of ``task`` (see :meth:`Task.instance <derivations.engine.task.Task.instance>`).

    Parameters
    ----------
    task : Task
    M_value : int, optional
        Number of classes.
    values : dict, optional
        Parameter name -> value; missing ones take the task's defaults.

    Returns
    -------
    TaskInstance

    Raises
    ------
    ValueError
        As :meth:`Task.instance <derivations.engine.task.Task.instance>` says.
    """
    subs = parameter_values(task, M_value, values)
    K = int(subs[M])
    types = [_number(task, g.types, subs, f"types of group {g.name!r}", integer=True) for g in task.groups]
    _check_size(task, K, types, subs)
    own = {g.name: _number(task, task.own_count(g), subs, f"multiplicity of group {g.name!r}")
           for g in task.groups}
    other = {g.name: _number(task, g.other_multiplicity, subs, f"other_multiplicity of group {g.name!r}")
             for g in task.groups}
    layout = task.layout(K, {g.name: n for g, n in zip(task.groups, types)})
    names = [task.token_name(g, k, i) for g, k, i in layout]
    d = sum(1 for g, _, _ in layout if g.embedded)
    scale = 1.0 / math.sqrt(_number(task, task.embedding_scale, subs, "embedding_scale"))
    embeddings = [[0.0] * d for _ in layout]
    for t, (g, _, _) in enumerate(layout):
        if g.embedded:
            embeddings[t][t] = scale
    counts, relevant = [], []
    for k in range(K):
        counts.append([(own[g.name] if j == k else other[g.name]) if g.per_class else own[g.name]
                       for g, j, _ in layout])
        relevant.append([bool(g.per_class and j == k and g.name in task.relevant) for g, j, _ in layout])
    index = {(g.name, k): t for t, (g, k, _) in enumerate(layout) if k is not None}
    query = [index[(task.query, k)] for k in range(K)]
    if task.outputs == "classes":
        label, n_out = list(range(K)), K
    else:
        label, n_out = [index[(task.label, k)] for k in range(K)], d
    hidden = K if task.outputs == "classes" else d
    return TaskInstance(M=K, token_names=names, embeddings=embeddings, counts=counts, query=query,
                        label=label, relevant=relevant, d=d, n_out=n_out, h_QK=hidden, h_OV=hidden,
                        score_scale=_number(task, task.score_scale, subs, "score_scale"),
                        hidden_of_class=list(range(K)))
