r"""The full-matrix attention model of any task instance, in four parameterizations.

With :math:`W_{QK}\in\mathbb R^{d\times d}` and :math:`W_{OV}\in\mathbb R^{n_{\rm out}\times d}`,
on a :class:`~numerics.model.instance.TaskInstance` (embeddings :math:`x_t`,
multiplicities :math:`c_{kt}`, queries :math:`q_k`, labels :math:`y_k`, kind
weights :math:`\pi_k`, score scale :math:`\gamma`),

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
and the gradient flow is :math:`\dot W = -\eta_W\,\partial L/\partial W`
(:func:`numerics.dynamics.training.gradient_flow`).

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

The layout machinery (keys, shapes, rates, :meth:`TaskModel.flatten`,
:meth:`TaskModel.unflatten`, the parameter checks, the circuits) is written
once here; the paper's model :class:`numerics.model.paper.AttentionModel` is
this class on the paper's instance with a sparse :math:`O(M^2)` forward pass and
gradient (the two agree to 1e-12, ``tests/numerics/model/test_task_numerics.py``).

>>> from numerics.model import TaskModel, paper_instance
>>> model = TaskModel(paper_instance(M=3, m=5, n=50, b=50), "CACO")
>>> p = model.init_params("zero")
>>> round(model.loss(p), 12) == round(float(np.log(3)), 12)
True
"""
from __future__ import annotations

import numpy as np

from derivations.core.vocabulary import (CIRCUITS, check_parameterization, check_positive,
                                    ov_factorized, qk_factorized)

from ..functions.special_functions import logsumexp_rows
from .instance import TaskInstance

__all__ = ["TaskModel", "INIT_KINDS"]

#: Kinds of :meth:`TaskModel.init_params`.
INIT_KINDS = ("zero", "identity", "random")

# the learning-rate attribute of every trained matrix, from the circuit table
_RATE_NAME = {**{c.matrix: c.rate for c in CIRCUITS.values()},
              **{f: r for c in CIRCUITS.values() for f, r in zip(c.factors, c.factor_rates)}}


class TaskModel:
    r"""The attention model of a :class:`~numerics.model.instance.TaskInstance` in one parameterization.

    Parameters
    ----------
    instance : TaskInstance
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    eta_QK, eta_OV : float
        Circuit rates (> 0); defaults of the factor rates.
    eta_Q, eta_K, eta_O, eta_V : float, optional
        Factor rates (``None``: the circuit's rate).

    Raises
    ------
    ValueError
        If ``instance`` is not a TaskInstance, the parameterization is unknown or a rate is not > 0.

    Notes
    -----
    Parameters are ``dict[str, ndarray]`` with keys among ``W_QK`` (d, d), ``W_Q``/``W_K`` (d, h_QK),
    ``W_OV`` (n_out, d), ``W_O`` (n_out, h_OV), ``W_V`` (h_OV, d); :meth:`flatten` concatenates them
    row-major in the order of :attr:`keys`, and :meth:`rates_vector` is aligned with that layout, so
    gradient flow in flat coordinates reads :math:`\dot\theta = -\eta \odot \nabla_\theta L`.
    """

    def __init__(self, instance, parameterization="CACO", *, eta_QK=1.0, eta_OV=1.0,
                 eta_Q=None, eta_K=None, eta_O=None, eta_V=None):
        if not isinstance(instance, TaskInstance):
            raise ValueError(f"instance must be a TaskInstance, got {type(instance).__name__}")
        self._setup(parameterization, (instance.d, instance.n_out, instance.h_QK, instance.h_OV),
                    dict(eta_QK=eta_QK, eta_OV=eta_OV, eta_Q=eta_Q, eta_K=eta_K, eta_O=eta_O,
                         eta_V=eta_V))
        self._bind(instance)

    # ---------------------------------------------------------------- structure
    def _setup(self, parameterization, dims, etas):
        """Parameterization, rates and flat layout (shared by every model)."""
        self.parameterization = check_parameterization(parameterization)
        # read on every gradient evaluation: looked up once
        self._factorized = (qk_factorized(self.parameterization), ov_factorized(self.parameterization))
        self.eta_QK = check_positive("eta_QK", etas["eta_QK"])
        self.eta_OV = check_positive("eta_OV", etas["eta_OV"])
        for name, default in (("eta_Q", self.eta_QK), ("eta_K", self.eta_QK),
                              ("eta_O", self.eta_OV), ("eta_V", self.eta_OV)):
            v = etas[name]
            setattr(self, name, default if v is None else check_positive(name, v))
        d, n_out, h_QK, h_OV = dims
        shapes = {"W_QK": (d, d), "W_Q": (d, h_QK), "W_K": (d, h_QK),
                  "W_OV": (n_out, d), "W_O": (n_out, h_OV), "W_V": (h_OV, d)}
        layout, start = [], 0
        for key in self.keys:
            size = shapes[key][0] * shapes[key][1]
            layout.append((key, shapes[key], start, start + size))
            start += size
        self._layout = tuple(layout)
        self.n_params = start
        rate_of = self.rates()
        self._rates = np.concatenate([np.full(e - s, rate_of[k]) for k, _, s, e in layout])
        self._rates.flags.writeable = False

    def _bind(self, instance):
        """Constants of the general forward pass."""
        self.instance = inst = instance
        self._E = inst.embeddings
        self._Xq = inst.embeddings[inst.query]                     # (K, d)
        with np.errstate(divide="ignore"):
            self._logc = np.where(inst.counts > 0, np.log(inst.counts), -np.inf)
        self._pi = inst.weights
        self._rows = np.arange(inst.K)

    @property
    def qk_factorized(self) -> bool:
        """True if the attention circuit is factorized (``W_QK = W_Q W_K^T``)."""
        return self._factorized[0]

    @property
    def ov_factorized(self) -> bool:
        """True if the output circuit is factorized (``W_OV = W_O W_V``)."""
        return self._factorized[1]

    @property
    def keys(self) -> tuple:
        """Names of the trained matrices, in flattening order."""
        P = self.parameterization
        return tuple(k for c in CIRCUITS.values()
                     for k in (c.factors if c.factorized(P) else (c.matrix,)))

    @property
    def shapes(self) -> dict:
        """``{key: shape}`` of the trained matrices."""
        return {k: s for k, s, _, _ in self._layout}

    def rates(self) -> dict:
        """``{key: learning rate}`` of the trained matrices (names from the
        circuit table :data:`derivations.core.vocabulary.CIRCUITS`)."""
        return {k: getattr(self, _RATE_NAME[k]) for k in self.keys}

    def rates_vector(self) -> np.ndarray:
        r"""Per-entry learning rates aligned with :meth:`flatten` (read-only)."""
        return self._rates

    def flatten(self, params) -> np.ndarray:
        """Concatenate the matrices of ``params`` (row-major, order :attr:`keys`).

        Leading batch axes are allowed: every matrix of shape
        ``(..., r, c)`` with common leading shape gives ``(..., n_params)``.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        ndarray
            Shape ``(..., n_params)``.
        """
        self._check_params(params, batched=True)
        lead = np.shape(params[self.keys[0]])[:-2]
        return np.concatenate([np.reshape(np.asarray(params[k], dtype=float), lead + (-1,))
                               for k in self.keys], axis=-1)

    def unflatten(self, vec) -> dict:
        """Inverse of :meth:`flatten`; returns *views* into ``vec`` when possible.

        Parameters
        ----------
        vec : array_like
            Shape ``(..., n_params)`` (leading batch axes allowed).

        Returns
        -------
        dict
            ``{key: matrix}`` of shapes ``(..., r, c)``.

        Raises
        ------
        ValueError
            The last axis is not of length ``n_params``.
        """
        vec = np.asarray(vec, dtype=float)
        if vec.ndim < 1 or vec.shape[-1] != self.n_params:
            raise ValueError(f"vec must have last axis of length n_params={self.n_params}, "
                             f"got shape {vec.shape}")
        lead = vec.shape[:-1]
        return {k: vec[..., s:e].reshape(lead + shp) for k, shp, s, e in self._layout}

    def _unflatten_fast(self, vec):
        return {k: vec[s:e].reshape(shp) for k, shp, s, e in self._layout}

    def _check_params(self, params, batched=False):
        if not isinstance(params, dict):
            raise ValueError(
                f"params must be a dict with keys {self.keys}, got {type(params).__name__}")
        lead = None
        for k, shp, _, _ in self._layout:
            if k not in params:
                raise ValueError(
                    f"params is missing {k!r}; {self.parameterization} needs keys {self.keys}")
            s = np.shape(params[k])
            if s[-2:] != shp or (not batched and len(s) != 2):
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
        ``"random"``: i.i.d. :math:`\mathcal N(0, \mathrm{scale}^2)`, ``seed``
        for :func:`numpy.random.default_rng`. (The structured initialization,
        a point of the invariant family, is
        :func:`numerics.model.family.structured_params`.)

        Parameters
        ----------
        kind : {"zero", "identity", "random"}
        scale : float
            Scale of the identity or standard deviation of the entries (> 0).
        seed : int
            Seed of the random initialization.

        Returns
        -------
        dict
            ``{key: matrix}`` (:attr:`keys`).

        Raises
        ------
        ValueError
            An unknown ``kind`` or a ``scale`` that is not finite and > 0.
        """
        if kind not in INIT_KINDS:
            raise ValueError(f"kind must be one of {INIT_KINDS}, got {kind!r}")
        scale = check_positive("scale", scale)
        if kind == "random":
            rng = np.random.default_rng(seed)
            return {k: scale * rng.standard_normal(s) for k, s, _, _ in self._layout}
        if kind == "zero":
            return {k: np.zeros(s) for k, s, _, _ in self._layout}
        return {k: scale * np.eye(*s) for k, s, _, _ in self._layout}

    def random_params(self, scale=1e-2, seed=0) -> dict:
        r"""Random parameters: every entry i.i.d. :math:`\mathcal N(0, \mathrm{scale}^2)`
        (``init_params("random", scale, seed)``).

        Parameters
        ----------
        scale : float, optional
        seed : int, optional

        Returns
        -------
        dict
        """
        return self.init_params("random", scale, seed)

    # ---------------------------------------------------------------- forward
    def circuits(self, params):
        r"""Effective circuits ``(W_QK, W_OV)``: :math:`W_Q W_K^\top` and
        :math:`W_O W_V` when factorized.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        (ndarray, ndarray)
        """
        self._check_params(params, batched=True)
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
        lse = logsumexp_rows(Z)
        ce = lse - Z[..., self._rows, inst.label]
        return a, H, Z, lse, ce

    def attention(self, params) -> np.ndarray:
        """Attention per kind and type (with multiplicities).

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        ndarray, shape (..., K, T)
        """
        return self._forward_circuits(*self.circuits(params))[0]

    def relevant_attention(self, params) -> np.ndarray:
        r"""Attention on the relevant tokens per kind, :math:`\alpha_k`.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        ndarray, shape (..., K)
        """
        a = self._forward_circuits(*self.circuits(params))[0]
        return np.where(self.instance.relevant, a, 0.0).sum(axis=-1)

    def alpha(self, params):
        r"""Class-averaged relevant attention :math:`\sum_k \pi_k\alpha_k`.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        float or ndarray
            A float, or an array over the leading batch axes.
        """
        al = self.relevant_attention(params) @ self._pi
        return float(al) if np.ndim(al) == 0 else al

    def class_losses(self, params) -> np.ndarray:
        """Per-kind cross-entropies.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        ndarray, shape (..., K)
        """
        return self._forward_circuits(*self.circuits(params))[-1]

    def loss(self, params):
        r"""Population loss :math:`\sum_k\pi_k\,\mathrm{CE}_k`.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        float or ndarray
            A float, or an array over the leading batch axes.
        """
        L = self.class_losses(params) @ self._pi
        return float(L) if np.ndim(L) == 0 else L

    def summarize(self, vecs) -> dict:
        """Loss and class-averaged relevant attention of flat states.

        Parameters
        ----------
        vecs : ndarray, shape (..., n_params)
            In the layout of :meth:`flatten`.

        Returns
        -------
        dict
            ``{"loss", "alpha"}``, arrays of shape ``(...)``.
        """
        p = self.unflatten(vecs)
        a, _, _, _, ce = self._forward_circuits(*self._circuits(p))
        al = np.where(self.instance.relevant, a, 0.0).sum(axis=-1)
        return {"loss": ce @ self._pi, "alpha": al @ self._pi}

    # ---------------------------------------------------------------- gradient
    def loss_and_grad(self, params):
        """Loss and analytic gradient ``{key: dL/dW}`` (see the module docstring).

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`), no batch axes.

        Returns
        -------
        loss : float
        grads : dict[str, ndarray]
            Same keys and shapes as ``params``.
        """
        self._check_params(params)
        L, g = self._loss_and_grad_flat(self.flatten(params))
        return L, self._unflatten_fast(g)

    def loss_and_grad_flat(self, vec):
        """Loss and gradient in the flat layout of :meth:`flatten`.

        Parameters
        ----------
        vec : array_like, shape (n_params,)

        Returns
        -------
        loss : float
        grad : ndarray, shape (n_params,)

        Raises
        ------
        ValueError
            ``vec`` of another shape.
        """
        vec = np.asarray(vec, dtype=float)
        if vec.shape != (self.n_params,):
            raise ValueError(f"vec must have shape ({self.n_params},), got {vec.shape}")
        return self._loss_and_grad_flat(vec)

    def _loss_flat(self, vec):
        # hot path (events): the loss alone, no validation
        return float(self.summarize(vec)["loss"])

    def _loss_and_grad_flat(self, vec):
        # hot path: no validation
        inst = self.instance
        p = self._unflatten_fast(vec)
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
        return float(ce @ self._pi), self._chain_rule(p, gQK, gOV)

    def _chain_rule(self, p, gQK, gOV):
        """Flat gradient of the trained matrices from the circuit gradients."""
        g = np.empty(self.n_params)
        out = self._unflatten_fast(g)
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
        return g
