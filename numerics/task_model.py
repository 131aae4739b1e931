r"""Full-matrix NumPy attention model of any concrete task instance, four parameterizations.

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

Model
-----
With :math:`W_{QK}\in\mathbb R^{d\times d}` and :math:`W_{OV}\in\mathbb R^{n_{\rm out}\times d}`

.. math::

    S_{kt} = \gamma\, x_{q_k}^\top W_{QK} x_t,\qquad
    a_{kt} = \frac{c_{kt} e^{S_{kt}}}{\sum_{t'} c_{kt'} e^{S_{kt'}}},\qquad
    h_k = \sum_t a_{kt} x_t,\qquad z^{(k)} = W_{OV} h_k,

    L = \sum_k \pi_k \bigl[\operatorname{logsumexp}(z^{(k)}) - z^{(k)}_{y_k}\bigr],

i.e. the softmax over positions is taken with multiplicities.  The attention on
the relevant tokens is :math:`\alpha_k = \sum_{t\in R_k} a_{kt}` and
``alpha`` is its class average.  Factorized circuits are
:math:`W_{QK} = W_Q W_K^\top` (:math:`W_Q, W_K \in\mathbb R^{d\times h_{QK}}`) and
:math:`W_{OV} = W_O W_V` (:math:`W_O\in\mathbb R^{n_{\rm out}\times h_{OV}}`,
:math:`W_V\in\mathbb R^{h_{OV}\times d}`); every trained matrix has its own rate
and the gradient flow is :math:`\dot W = -\eta_W\,\partial L/\partial W`.

Gradient
--------
With :math:`G_{kj} = \pi_k(\mathrm{softmax}(z^{(k)})_j - \delta_{j y_k})`,
:math:`D = G W_{OV} X^\top` (:math:`X` = embeddings) and
:math:`\Delta_{kt} = a_{kt}(D_{kt} - \sum_{t'} a_{kt'} D_{kt'})`:

.. math::

    \frac{\partial L}{\partial W_{OV}} = G^\top H, \qquad
    \frac{\partial L}{\partial W_{QK}} = \gamma\, X_q^\top \Delta X,

(:math:`H` = rows :math:`h_k`, :math:`X_q` = rows :math:`x_{q_k}`), and the chain
rule for factors (:math:`\partial_{W_Q} = G_{QK}W_K`, :math:`\partial_{W_K} = G_{QK}^\top W_Q`,
:math:`\partial_{W_O} = G_{OV}W_V^\top`, :math:`\partial_{W_V} = W_O^\top G_{OV}`).
The label entry :math:`\mathrm{softmax}_{y}-1` is evaluated as
:math:`-\sum_{j\ne y}\mathrm{softmax}_j` (no cancellation at small loss).

The flat layout (keys, shapes, order) is the one of
:class:`numerics.attention_model.AttentionModel`, so for the paper's task the
two models agree entry by entry (``tests/test_task_numerics.py``).

>>> from numerics.task_model import paper_instance, TaskModel
>>> model = TaskModel(paper_instance(M=3, m=5, n=50, b=50), "CACO")
>>> p = model.init_params("zero")
>>> round(model.loss(p), 12) == round(float(np.log(3)), 12)
True
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.special import logsumexp

from derivations.vocabulary import PARAMETERIZATIONS, check_parameterization, check_positive

from .attention_model import _FlatGradientFlow

__all__ = ["PARAMETERIZATIONS", "TaskInstance", "TaskModel", "FlowResult", "task_gradient_flow",
           "paper_instance", "instance_of_task"]

_INIT_KINDS = ("zero", "identity", "random")


# --------------------------------------------------------------------------- #
# instance
# --------------------------------------------------------------------------- #
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
        if isinstance(self.n_out, bool) or not isinstance(self.n_out, numbers.Integral) \
                or self.n_out < 2:
            raise ValueError(f"n_out must be an integer >= 2, got {self.n_out!r}")
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
    """
    if isinstance(M, bool) or not isinstance(M, numbers.Integral) or M < 2:
        raise ValueError(f"M must be an integer >= 2, got {M!r}")
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
    r"""The concrete instance of an engine task (:mod:`derivations.task`) as a :class:`TaskInstance`.

    Parameters
    ----------
    task : str or derivations.task.Task
        A built-in task name (:func:`derivations.task.get_task`) or a user-built ``Task``.
    M : int, optional
        Number of classes (default: the task's).
    **values
        Parameter values (``m, n, b, n_c, ...``); missing ones take the task's defaults.

    >>> inst = instance_of_task("shared-irrelevant", M=2, n_c=2)
    >>> inst.d, inst.n_out, inst.counts[0].tolist()
    (6, 2, [0.0, 0.0, 5.0, 0.0, 25.0, 25.0])
    """
    from derivations.task import Task, get_task  # the description only; no derivation runs

    if isinstance(task, str):
        task = get_task(task)
    elif not isinstance(task, Task):
        raise ValueError(f"task must be a task name or a derivations.task.Task, got {task!r}")
    raw = task.instance(M=M, values=values or None)
    return TaskInstance(np.asarray(raw.embeddings, dtype=float), np.asarray(raw.counts, dtype=float),
                        np.asarray(raw.query, dtype=int), np.asarray(raw.label, dtype=int),
                        int(raw.n_out), np.asarray(raw.relevant, dtype=bool),
                        score_scale=float(raw.score_scale), h_QK=int(raw.h_QK), h_OV=int(raw.h_OV),
                        name=task.name)


# --------------------------------------------------------------------------- #
# model
# --------------------------------------------------------------------------- #
class TaskModel(_FlatGradientFlow):
    r"""The attention model of a :class:`TaskInstance` in one parameterization.

    Parameters
    ----------
    instance : TaskInstance
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    eta_QK, eta_OV : float
        Circuit rates (> 0); defaults of the factor rates.
    eta_Q, eta_K, eta_O, eta_V : float, optional
        Factor rates.

    Notes
    -----
    Parameters are ``dict[str, ndarray]`` with keys among ``W_QK`` (d, d),
    ``W_Q``/``W_K`` (d, h_QK), ``W_OV`` (n_out, d), ``W_O`` (n_out, h_OV),
    ``W_V`` (h_OV, d); :meth:`flatten` concatenates them row-major in the
    order of :attr:`keys` (the layout of
    :class:`~numerics.attention_model.AttentionModel`).
    """

    def __init__(self, instance, parameterization="CACO", *, eta_QK=1.0, eta_OV=1.0,
                 eta_Q=None, eta_K=None, eta_O=None, eta_V=None):
        if not isinstance(instance, TaskInstance):
            raise ValueError(f"instance must be a TaskInstance, got {type(instance).__name__}")
        self.instance = inst = instance
        self.parameterization = check_parameterization(parameterization)
        self.eta_QK = check_positive("eta_QK", eta_QK)
        self.eta_OV = check_positive("eta_OV", eta_OV)
        rate = {"W_QK": self.eta_QK, "W_OV": self.eta_OV}
        for nm, v, dflt in (("W_Q", eta_Q, self.eta_QK), ("W_K", eta_K, self.eta_QK),
                            ("W_O", eta_O, self.eta_OV), ("W_V", eta_V, self.eta_OV)):
            rate[nm] = dflt if v is None else check_positive("eta_" + nm[-1], v)
        d, no = inst.d, inst.n_out
        shapes = {"W_QK": (d, d), "W_Q": (d, inst.h_QK), "W_K": (d, inst.h_QK),
                  "W_OV": (no, d), "W_O": (no, inst.h_OV), "W_V": (inst.h_OV, d)}
        layout, start = [], 0
        for k in self.keys:
            size = shapes[k][0] * shapes[k][1]
            layout.append((k, shapes[k], start, start + size))
            start += size
        self._layout = tuple(layout)
        self.n_params = start
        self._rate = {k: rate[k] for k in self.keys}
        self._rates = np.concatenate([np.full(e - s, rate[k]) for k, _, s, e in layout])
        self._rates.flags.writeable = False
        # constants of the hot path
        self._E = inst.embeddings
        self._Xq = inst.embeddings[inst.query]                     # (K, d)
        with np.errstate(divide="ignore"):
            self._logc = np.where(inst.counts > 0, np.log(inst.counts), -np.inf)
        self._pi = inst.weights
        self._rows = np.arange(inst.K)

    # ---------------------------------------------------------------- structure
    @property
    def qk_factorized(self) -> bool:
        return self.parameterization[0] == "F"

    @property
    def ov_factorized(self) -> bool:
        return self.parameterization[2] == "F"

    @property
    def keys(self) -> tuple:
        """Names of the trained matrices, in flattening order."""
        qk = ("W_Q", "W_K") if self.qk_factorized else ("W_QK",)
        ov = ("W_O", "W_V") if self.ov_factorized else ("W_OV",)
        return qk + ov

    @property
    def shapes(self) -> dict:
        return {k: s for k, s, _, _ in self._layout}

    def rates(self) -> dict:
        """``{key: learning rate}``."""
        return dict(self._rate)

    def rates_vector(self) -> np.ndarray:
        """Per-entry rates aligned with :meth:`flatten` (read-only)."""
        return self._rates

    def flatten(self, params) -> np.ndarray:
        """Concatenate ``params`` (row-major, order :attr:`keys`); leading batch axes allowed."""
        self._check_params(params)
        lead = np.shape(params[self.keys[0]])[:-2]
        return np.concatenate([np.reshape(np.asarray(params[k], dtype=float), lead + (-1,))
                               for k in self.keys], axis=-1)

    def unflatten(self, vec) -> dict:
        """Inverse of :meth:`flatten` (views); ``vec`` of shape ``(..., n_params)``."""
        vec = np.asarray(vec, dtype=float)
        if vec.ndim < 1 or vec.shape[-1] != self.n_params:
            raise ValueError(f"vec must have last axis of length n_params={self.n_params}, "
                             f"got shape {vec.shape}")
        lead = vec.shape[:-1]
        return {k: vec[..., s:e].reshape(lead + shp) for k, shp, s, e in self._layout}

    def _check_params(self, params):
        if not isinstance(params, dict):
            raise ValueError(f"params must be a dict with keys {self.keys}")
        lead = None
        for k, shp, _, _ in self._layout:
            if k not in params:
                raise ValueError(f"params is missing {k!r}; {self.parameterization} needs {self.keys}")
            s = np.shape(params[k])
            if s[-2:] != shp:
                raise ValueError(f"params[{k!r}] must have shape {shp}, got {s}")
            if lead is None:
                lead = s[:-2]
            elif s[:-2] != lead:
                raise ValueError("all params must share the same leading batch shape")

    def init_params(self, kind="zero", scale=1e-6, seed=0) -> dict:
        r"""Initial parameters.

        ``"zero"``: all matrices zero (a factorized circuit then never moves:
        zero is a critical point of its factors). ``"identity"``: every matrix
        ``scale`` times the rectangular identity (the authors' ``1e-6·I``).
        ``"random"``: i.i.d. :math:`\mathcal N(0, \mathrm{scale}^2)`.
        """
        if kind not in _INIT_KINDS:
            raise ValueError(f"kind must be one of {_INIT_KINDS}, got {kind!r}")
        scale = check_positive("scale", scale)
        if kind == "random":
            rng = np.random.default_rng(seed)
            return {k: scale * rng.standard_normal(s) for k, s, _, _ in self._layout}
        if kind == "zero":
            return {k: np.zeros(s) for k, s, _, _ in self._layout}
        return {k: scale * np.eye(*s) for k, s, _, _ in self._layout}

    # ---------------------------------------------------------------- forward
    def circuits(self, params):
        """Effective ``(W_QK, W_OV)`` (products of the factors when factorized)."""
        self._check_params(params)
        return self._circuits(params)

    def _circuits(self, p):
        W_QK = p["W_Q"] @ np.swapaxes(p["W_K"], -1, -2) if self.qk_factorized else p["W_QK"]
        W_OV = p["W_O"] @ p["W_V"] if self.ov_factorized else p["W_OV"]
        return np.asarray(W_QK, dtype=float), np.asarray(W_OV, dtype=float)

    def _forward_circuits(self, W_QK, W_OV):
        """Attention a (..., K, T), context H (..., K, d), logits Z, per-kind CE (..., K)."""
        inst = self.instance
        S = inst.score_scale * ((self._Xq @ W_QK) @ self._E.T)      # (..., K, T)
        u = S + self._logc
        a = np.exp(u - u.max(axis=-1, keepdims=True))
        a /= a.sum(axis=-1, keepdims=True)
        H = a @ self._E                                             # (..., K, d)
        Z = H @ np.swapaxes(W_OV, -1, -2)                           # (..., K, n_out)
        lse = logsumexp(Z, axis=-1)
        ce = lse - Z[..., self._rows, inst.label]
        return a, H, Z, lse, ce

    def attention(self, params) -> np.ndarray:
        """Attention per kind and type (with multiplicities), shape ``(..., K, T)``."""
        return self._forward_circuits(*self.circuits(params))[0]

    def relevant_attention(self, params) -> np.ndarray:
        r"""Attention on the relevant tokens per kind, :math:`\alpha_k`, shape ``(..., K)``."""
        a = self.attention(params)
        return np.where(self.instance.relevant, a, 0.0).sum(axis=-1)

    def alpha(self, params):
        r"""Class-averaged relevant attention :math:`\sum_k \pi_k\alpha_k` (float or array)."""
        al = self.relevant_attention(params) @ self._pi
        return float(al) if np.ndim(al) == 0 else al

    def class_losses(self, params) -> np.ndarray:
        """Per-kind cross-entropies, shape ``(..., K)``."""
        return self._forward_circuits(*self.circuits(params))[-1]

    def loss(self, params):
        r"""Population loss :math:`\sum_k\pi_k\,\mathrm{CE}_k` (float or array over batch axes)."""
        L = self.class_losses(params) @ self._pi
        return float(L) if np.ndim(L) == 0 else L

    def summarize(self, vecs) -> dict:
        """``{"loss", "alpha"}`` arrays for flat states of shape ``(..., n_params)``."""
        p = self.unflatten(vecs)
        a, _, _, _, ce = self._forward_circuits(*self._circuits(p))
        al = np.where(self.instance.relevant, a, 0.0).sum(axis=-1)
        return {"loss": ce @ self._pi, "alpha": al @ self._pi}

    # ---------------------------------------------------------------- gradient
    def loss_and_grad(self, params):
        """Loss and analytic gradient ``{key: dL/dW}`` (see the module docstring)."""
        self._check_params(params)
        L, g = self._loss_and_grad_flat(self.flatten(params))
        return L, {k: g[s:e].reshape(shp) for k, shp, s, e in self._layout}

    def loss_and_grad_flat(self, vec):
        """Loss and gradient in the flat layout."""
        vec = np.asarray(vec, dtype=float)
        if vec.shape != (self.n_params,):
            raise ValueError(f"vec must have shape ({self.n_params},), got {vec.shape}")
        return self._loss_and_grad_flat(vec)

    def _loss_and_grad_flat(self, vec):
        inst = self.instance
        p = {k: vec[s:e].reshape(shp) for k, shp, s, e in self._layout}
        W_QK, W_OV = self._circuits(p)
        a, H, Z, lse, ce = self._forward_circuits(W_QK, W_OV)
        rows, lab = self._rows, inst.label
        G = np.exp(Z - lse[:, None])
        G[rows, lab] = 0.0
        G[rows, lab] = -G.sum(axis=1)                  # softmax_y - 1 without cancellation
        G *= self._pi[:, None]
        gOV = G.T @ H                                  # (n_out, d)
        D = (G @ W_OV) @ self._E.T                     # (K, T)
        dS = a * (D - (a * D).sum(axis=1, keepdims=True))
        gQK = inst.score_scale * (self._Xq.T @ (dS @ self._E))   # (d, d)
        g = np.empty(self.n_params)
        out = {k: g[s:e].reshape(shp) for k, shp, s, e in self._layout}
        if self.qk_factorized:
            out["W_Q"][:] = gQK @ p["W_K"]
            out["W_K"][:] = gQK.T @ p["W_Q"]
        else:
            out["W_QK"][:] = gQK
        if self.ov_factorized:
            out["W_O"][:] = gOV @ p["W_V"].T
            out["W_V"][:] = p["W_O"].T @ gOV
        else:
            out["W_OV"][:] = gOV
        return float(ce @ self._pi), g



# --------------------------------------------------------------------------- #
# gradient flow
# --------------------------------------------------------------------------- #
class _TooManyEvaluations(Exception):
    pass


@dataclass
class FlowResult:
    """Result of :func:`task_gradient_flow`.

    Attributes
    ----------
    t, loss, alpha : ndarray
        Records (``t_eval`` points reached, or solver steps), ending at the
        terminal event if it fired.
    y : ndarray, shape (n_records, n_params)
        Flat states at ``t``.
    crossings : dict[float, dict]
        Per loss level crossed downwards: ``{"t", "loss", "alpha", "y"}`` at the
        crossing (located by ``solve_ivp``'s event root finding).
    status : int
        1 target loss reached, 0 end of ``t_span``, -1 solver failure.
    message : str
    nfev : int
    """

    t: np.ndarray
    loss: np.ndarray
    alpha: np.ndarray
    y: np.ndarray
    crossings: dict
    status: int
    message: str
    nfev: int

    @property
    def success(self) -> bool:
        return self.status >= 0


def task_gradient_flow(model, params0, *, t_span=(0.0, np.inf), t_eval=None, target_loss=None,
                       loss_thresholds=(), rtol=1e-10, atol=1e-12, method="DOP853",
                       max_step=np.inf, keep_states=True, max_nfev=500_000):
    r"""Integrate :math:`\dot\theta = -\eta\odot\nabla L` with :func:`scipy.integrate.solve_ivp`.

    Parameters
    ----------
    model : TaskModel
    params0 : dict or ndarray
        Initial parameters (dict or flat vector).
    t_span : (float, float)
        Integration interval; an infinite end requires ``target_loss``.
    t_eval : array_like, optional
        Record times (default: the solver's steps).
    target_loss : float, optional
        Terminal event: stop when the loss falls to this level (the event is on
        :math:`\log L - \log L^*`, root refined by ``solve_ivp``).
    loss_thresholds : iterable of float
        Non-terminal events: record the state where the loss first falls
        through each level.
    rtol, atol, method, max_step
        Passed to ``solve_ivp``.
    keep_states : bool
        Keep the flat states of the records (``y``); else ``y`` is empty.
    max_nfev : int
        Bound on gradient evaluations: the run stops with ``status = -1`` and a
        message instead of hanging when the loss creeps towards the target.

    Returns
    -------
    FlowResult
    """
    if not isinstance(model, TaskModel):
        raise ValueError(f"model must be a TaskModel, got {type(model).__name__}")
    y0 = (model.flatten(params0) if isinstance(params0, dict)
          else np.array(params0, dtype=float)).astype(float, copy=True)
    if y0.shape != (model.n_params,):
        raise ValueError(f"params0 must have {model.n_params} entries, got shape {y0.shape}")
    levels = [check_positive("loss_thresholds", v) for v in loss_thresholds]
    if target_loss is not None:
        target_loss = check_positive("target_loss", target_loss)
    t_span = tuple(float(v) for v in t_span)
    if len(t_span) != 2 or not (math.isfinite(t_span[0]) and t_span[1] > t_span[0]):
        raise ValueError(f"t_span must be (t0, t1) with finite t0 < t1, got {t_span!r}")
    if not math.isfinite(t_span[1]) and target_loss is None:
        raise ValueError("an infinite t_span needs target_loss")
    rates = model.rates_vector()
    lg = model._loss_and_grad_flat
    counter = [0]
    max_nfev = int(max_nfev)

    def rhs(t, y):
        counter[0] += 1
        if counter[0] > max_nfev:
            raise _TooManyEvaluations
        _, g = lg(y)
        g *= rates
        np.negative(g, out=g)
        return g

    def make_event(level, terminal):
        log_level = math.log(level)

        def event(t, y):
            return math.log(model.summarize(y)["loss"]) - log_level
        event.terminal, event.direction = terminal, -1
        return event

    events = [make_event(v, False) for v in levels]
    keys = list(levels)
    if target_loss is not None:
        events.append(make_event(target_loss, True))
        keys.append(target_loss)
    try:
        sol = solve_ivp(rhs, t_span, y0, method=method, t_eval=t_eval, events=events or None,
                        rtol=rtol, atol=atol, max_step=max_step)
    except _TooManyEvaluations:
        s = model.summarize(y0)
        return FlowResult(t=np.empty(0), loss=np.empty(0), alpha=np.empty(0),
                          y=np.empty((0, model.n_params)), crossings={}, status=-1,
                          message=f"stopped after max_nfev={max_nfev} gradient evaluations "
                                  f"(initial loss {float(s['loss']):.6g})", nfev=counter[0])
    crossings = {}
    for lev, te, ye in zip(keys, sol.t_events or (), sol.y_events or ()):
        if len(te) and lev not in crossings:
            s = model.summarize(ye[0])
            crossings[lev] = {"t": float(te[0]), "loss": float(s["loss"]),
                              "alpha": float(s["alpha"]), "y": ye[0].copy()}
    t, Y = sol.t, sol.y.T
    if sol.status == 1 and target_loss in crossings:
        c = crossings[target_loss]
        if t.size == 0 or t[-1] < c["t"]:
            t = np.append(t, c["t"])
            Y = np.vstack([Y, c["y"][None, :]])
    summ = model.summarize(Y) if len(t) else {"loss": np.empty(0), "alpha": np.empty(0)}
    return FlowResult(t=np.asarray(t, float), loss=np.asarray(summ["loss"]),
                      alpha=np.asarray(summ["alpha"]),
                      y=Y if keep_states else np.empty((0, model.n_params)),
                      crossings=crossings, status=int(sol.status),
                      message=str(sol.message), nfev=counter[0])
