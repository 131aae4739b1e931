r"""Single-layer self-attention model of the paper, in four parameterizations.

Setting
-------
There are :math:`M \ge 2` classes and the embedding dimension is
:math:`d = 2M`.  The query token of class :math:`k` is :math:`q_k` (index
:math:`k`), the relevant token of class :math:`k` is :math:`r_k` (index
:math:`M + k`), and

.. math::

    x(q_k) = e_{q_k} / \sqrt{b}, \qquad x(r_k) = e_{r_k} / \sqrt{b},

while irrelevant tokens have the zero embedding.  A sequence of class
:math:`k` consists of :math:`m` copies of :math:`r_k` and :math:`n`
irrelevant tokens (:math:`m, n > 0` are real *multiplicities*: they enter
only as weights of the two groups in the softmax), followed by the query
:math:`q_k`, which attends over the :math:`m + n` context positions.

With :math:`s_j = x(q_k)^\top W_{QK} x_j` the relevant score is
:math:`S_k = W_{QK}[q_k, r_k] / b` and the irrelevant score is 0, so the
attention on the relevant group is

.. math::

    \alpha_k = \frac{m e^{S_k}}{m e^{S_k} + n}
             = \sigma\!\left(S_k + \log\frac{m}{n}\right).

The context is :math:`c_k = \alpha_k e_{r_k}/\sqrt{b}`, the logits are
:math:`z^{(k)} = W_{OV} c_k \in \mathbb{R}^M`, and the population loss is

.. math::

    L = \frac{1}{M} \sum_{k} \Bigl[\operatorname{logsumexp}(z^{(k)}) - z^{(k)}_k\Bigr].

Parameterizations (``"CACO"``, ``"CAFO"``, ``"FACO"``, ``"FAFO"``): the
first letter pair says whether the attention (QK) circuit is *collapsed*
(one matrix :math:`W_{QK}\in\mathbb{R}^{d\times d}`) or *factorized*
(:math:`W_{QK} = W_Q W_K^\top`, :math:`W_Q, W_K\in\mathbb{R}^{d\times M}`);
the second pair says the same for the output (OV) circuit
(:math:`W_{OV}\in\mathbb{R}^{M\times d}` or :math:`W_{OV} = W_O W_V`,
:math:`W_O\in\mathbb{R}^{M\times M}`, :math:`W_V\in\mathbb{R}^{M\times d}`).
Every trained matrix :math:`W` has its own learning rate :math:`\eta_W`;
gradient flow is :math:`\dot W = -\eta_W\,\partial L/\partial W`.

Invariant family
----------------
From the structured (or zero) initialization the flow stays on

.. math::

    W_{QK} = b\,\mu_{QK} \sum_k e_{q_k} e_{r_k}^\top, \qquad
    W_{OV} = \sqrt{b}\,\mu_{OV} \sum_k \bigl(e_k - \tfrac{1}{M}\mathbf 1\bigr) e_{r_k}^\top,

on which the loss reduces to
:math:`L = \log\bigl(1 + (M-1) e^{-\alpha \mu_{OV}}\bigr)` with
:math:`\alpha = m e^{\mu_{QK}}/(m e^{\mu_{QK}} + n)`.
:meth:`AttentionModel.project` returns the least-squares coordinates
:math:`(\mu_{OV}, \mu_{QK})` of arbitrary parameters and
:meth:`AttentionModel.distance_from_family` the relative residual.

Everything is vectorized over classes (no Python loop over :math:`k`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

__all__ = ["PARAMETERIZATIONS", "AttentionModel"]

#: Valid parameterization names (attention circuit letters, output circuit letters).
PARAMETERIZATIONS = ("CACO", "CAFO", "FACO", "FAFO")

_INIT_KINDS = ("structured", "random")


# --------------------------------------------------------------------------- #
# validation helpers
# --------------------------------------------------------------------------- #
def _check_positive(name, value):
    """Return ``float(value)`` or raise ValueError unless it is finite and > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}")
    return v


def _check_int(name, value, minimum):
    """Return ``int(value)`` or raise ValueError unless it is an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return v


def _check_parameterization(name):
    if name not in PARAMETERIZATIONS:
        raise ValueError(
            f"parameterization must be one of {PARAMETERIZATIONS}, got {name!r}"
        )
    return name


# --------------------------------------------------------------------------- #
# model
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class AttentionModel:
    r"""The paper's single-layer attention model in one of four parameterizations.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
        Collapsed (C) or factorized (F) attention (first pair) and output
        (second pair) circuits.
    m, n : float
        Multiplicities (> 0, finite) of the relevant token :math:`r_k` and of
        the irrelevant tokens in the context.
    b : float
        Embedding scale (> 0, finite): :math:`x = e/\sqrt{b}`.
    M : int
        Number of classes (>= 2); embedding dimension :math:`d = 2M`.
    eta_QK, eta_OV : float
        Learning rates (> 0, finite) of the collapsed circuits; also the
        defaults for the factor rates.
    eta_Q, eta_K, eta_O, eta_V : float or None
        Learning rates of the factors; ``None`` means "use the circuit rate"
        (:math:`\eta_Q = \eta_K = \eta_{QK}`, :math:`\eta_O = \eta_V = \eta_{OV}`).

    Notes
    -----
    Parameters are passed around as ``dict[str, ndarray]`` with keys

    ============  ==============================  ============
    key           shape                           in
    ============  ==============================  ============
    ``"W_QK"``    :math:`(d, d)`                  CA..
    ``"W_Q"``     :math:`(d, M)`                  FA..
    ``"W_K"``     :math:`(d, M)`                  FA..
    ``"W_OV"``    :math:`(M, d)`                  ..CO
    ``"W_O"``     :math:`(M, M)`                  ..FO
    ``"W_V"``     :math:`(M, d)`                  ..FO
    ============  ==============================  ============

    and :meth:`flatten` concatenates them (row-major) in the order of
    :attr:`keys`.  :meth:`rates_vector` is aligned with that layout, so
    gradient flow in flat coordinates reads
    :math:`\dot\theta = -\eta \odot \nabla_\theta L`.
    """

    parameterization: str = "CACO"
    m: float = 5.0
    n: float = 50.0
    b: float = 50.0
    M: int = 20
    eta_QK: float = 1.0
    eta_OV: float = 1.0
    eta_Q: float | None = None
    eta_K: float | None = None
    eta_O: float | None = None
    eta_V: float | None = None
    # derived (not part of the constructor)
    _layout: tuple = field(init=False, repr=False, compare=False)
    _rates: np.ndarray = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        parameterization="CACO",
        *,
        m=5,
        n=50,
        b=50,
        M=20,
        eta_QK=1.0,
        eta_OV=1.0,
        eta_Q=None,
        eta_K=None,
        eta_O=None,
        eta_V=None,
    ):
        setattr_ = object.__setattr__
        setattr_(self, "parameterization", _check_parameterization(parameterization))
        setattr_(self, "m", _check_positive("m", m))
        setattr_(self, "n", _check_positive("n", n))
        setattr_(self, "b", _check_positive("b", b))
        setattr_(self, "M", _check_int("M", M, 2))
        eta_QK = _check_positive("eta_QK", eta_QK)
        eta_OV = _check_positive("eta_OV", eta_OV)
        setattr_(self, "eta_QK", eta_QK)
        setattr_(self, "eta_OV", eta_OV)
        for name, val, default in (
            ("eta_Q", eta_Q, eta_QK),
            ("eta_K", eta_K, eta_QK),
            ("eta_O", eta_O, eta_OV),
            ("eta_V", eta_V, eta_OV),
        ):
            setattr_(self, name, default if val is None else _check_positive(name, val))

        Mi, d = self.M, 2 * self.M
        shapes = {
            "W_QK": (d, d),
            "W_Q": (d, Mi),
            "W_K": (d, Mi),
            "W_OV": (Mi, d),
            "W_O": (Mi, Mi),
            "W_V": (Mi, d),
        }
        rate_of = {
            "W_QK": self.eta_QK,
            "W_Q": self.eta_Q,
            "W_K": self.eta_K,
            "W_OV": self.eta_OV,
            "W_O": self.eta_O,
            "W_V": self.eta_V,
        }
        layout, start = [], 0
        for key in self.keys:
            size = shapes[key][0] * shapes[key][1]
            layout.append((key, shapes[key], start, start + size))
            start += size
        setattr_(self, "_layout", tuple(layout))
        rates = np.concatenate([np.full(e - s, rate_of[k]) for k, _, s, e in layout])
        rates.flags.writeable = False
        setattr_(self, "_rates", rates)
        # constants used by the hot path
        setattr_(self, "_idx", np.arange(Mi))
        setattr_(self, "_sqrt_b", math.sqrt(self.b))
        setattr_(self, "_log_m_over_n", math.log(self.m) - math.log(self.n))

    # ------------------------------------------------------------------ #
    # structure
    # ------------------------------------------------------------------ #
    @property
    def d(self) -> int:
        """Embedding dimension :math:`d = 2M`."""
        return 2 * self.M

    @property
    def qk_factorized(self) -> bool:
        """True if the attention circuit is factorized (``W_QK = W_Q W_K^T``)."""
        return self.parameterization[0] == "F"

    @property
    def ov_factorized(self) -> bool:
        """True if the output circuit is factorized (``W_OV = W_O W_V``)."""
        return self.parameterization[2] == "F"

    @property
    def keys(self) -> tuple:
        """Names of the trained matrices, in flattening order."""
        qk = ("W_Q", "W_K") if self.qk_factorized else ("W_QK",)
        ov = ("W_O", "W_V") if self.ov_factorized else ("W_OV",)
        return qk + ov

    @property
    def shapes(self) -> dict:
        """``{key: shape}`` of the trained matrices."""
        return {k: shp for k, shp, _, _ in self._layout}

    @property
    def n_params(self) -> int:
        """Total number of scalar parameters (length of :meth:`flatten`)."""
        return self._layout[-1][3]

    def rates(self) -> dict:
        """``{key: learning rate}`` of the trained matrices."""
        return {
            k: {"W_QK": self.eta_QK, "W_Q": self.eta_Q, "W_K": self.eta_K,
                "W_OV": self.eta_OV, "W_O": self.eta_O, "W_V": self.eta_V}[k]
            for k in self.keys
        }

    def rates_vector(self) -> np.ndarray:
        r"""Per-entry learning rates aligned with :meth:`flatten` (read-only).

        Gradient flow in flat coordinates is
        :math:`\dot\theta = -\,\mathrm{rates}\odot\nabla_\theta L`.
        """
        return self._rates

    def flatten(self, params) -> np.ndarray:
        """Concatenate the matrices of ``params`` (row-major, order :attr:`keys`).

        Leading batch axes are allowed: every matrix of shape
        ``(..., r, c)`` with common leading shape gives ``(..., n_params)``.
        """
        self._check_params(params, batched=True)
        lead = np.shape(params[self.keys[0]])[:-2]
        return np.concatenate(
            [np.reshape(np.asarray(params[k], dtype=float), lead + (-1,))
             for k in self.keys],
            axis=-1,
        )

    def unflatten(self, vec) -> dict:
        """Inverse of :meth:`flatten`; returns *views* into ``vec`` when possible.

        ``vec`` may have leading batch axes: shape ``(..., n_params)``.
        """
        vec = np.asarray(vec, dtype=float)
        if vec.ndim < 1 or vec.shape[-1] != self.n_params:
            raise ValueError(
                f"vec must have last axis of length n_params={self.n_params}, "
                f"got shape {vec.shape}"
            )
        lead = vec.shape[:-1]
        return {k: vec[..., s:e].reshape(lead + shp) for k, shp, s, e in self._layout}

    def _unflatten_fast(self, vec):
        return {k: vec[s:e].reshape(shp) for k, shp, s, e in self._layout}

    def _check_params(self, params, batched=False):
        if not isinstance(params, dict):
            raise ValueError(
                f"params must be a dict with keys {self.keys}, got {type(params).__name__}"
            )
        lead = None
        for k, shp, _, _ in self._layout:
            if k not in params:
                raise ValueError(
                    f"params is missing {k!r}; {self.parameterization} needs keys {self.keys}"
                )
            s = np.shape(params[k])
            if s[-2:] != shp or (not batched and len(s) != 2):
                raise ValueError(f"params[{k!r}] must have shape {shp}, got {s}")
            if lead is None:
                lead = s[:-2]
            elif s[:-2] != lead:
                raise ValueError("all params must share the same leading batch shape")

    # ------------------------------------------------------------------ #
    # initialization
    # ------------------------------------------------------------------ #
    def init_params(self, kind="structured", eps=1e-2, scale=1e-2, seed=0) -> dict:
        r"""Initial parameters.

        Parameters
        ----------
        kind : {"structured", "random"}
            ``"structured"``: collapsed matrices are zero, factors are
            :math:`W_Q = \epsilon\sum_k e_{q_k} e_k^\top`,
            :math:`W_K = \epsilon\sum_k e_{r_k} e_k^\top`,
            :math:`W_O = \epsilon (I - \mathbf 1\mathbf 1^\top/M)`,
            :math:`W_V = \epsilon\sum_k e_k e_{r_k}^\top`
            (a point of the invariant family with
            :math:`\mu_{QK} = \epsilon^2/b`, :math:`\mu_{OV} = \epsilon^2/\sqrt b`
            when factorized).
            ``"random"``: every entry i.i.d. :math:`\mathcal N(0, \mathrm{scale}^2)`.
        eps : float
            Scale (> 0, finite) of the structured factor initialization.
        scale : float
            Standard deviation (> 0, finite) of the random initialization.
        seed : int, numpy.random.Generator or None
            Seed for :func:`numpy.random.default_rng` (``"random"`` only).

        Returns
        -------
        dict[str, ndarray]
        """
        if kind not in _INIT_KINDS:
            raise ValueError(f"kind must be one of {_INIT_KINDS}, got {kind!r}")
        eps = _check_positive("eps", eps)
        scale = _check_positive("scale", scale)
        M, d = self.M, self.d
        idx = np.arange(M)
        if kind == "random":
            rng = np.random.default_rng(seed)
            return {k: scale * rng.standard_normal(shp) for k, shp, _, _ in self._layout}
        out = {}
        for k, shp, _, _ in self._layout:
            W = np.zeros(shp)
            if k == "W_Q":
                W[idx, idx] = eps
            elif k == "W_K":
                W[M + idx, idx] = eps
            elif k == "W_O":
                W[:] = eps * (np.eye(M) - 1.0 / M)
            elif k == "W_V":
                W[idx, M + idx] = eps
            out[k] = W
        return out

    def family_params(self, mu_OV, mu_QK, *, a=None, o=None, w=0.0) -> dict:
        r"""Parameters on the invariant family with coordinates ``(mu_OV, mu_QK)``.

        Collapsed circuits are set to the family matrices.  Factorized ones use
        :math:`W_Q = a\sum_k e_{q_k}e_k^\top`, :math:`W_K = c\sum_k e_{r_k}e_k^\top`
        with :math:`c = b\mu_{QK}/a`, and :math:`W_O = o(I - \mathbf 1\mathbf 1^\top/M)`,
        :math:`W_V = \sum_k (v(e_k - \mathbf 1/M) + w\mathbf 1) e_{r_k}^\top` with
        :math:`v = \sqrt b\,\mu_{OV}/o`.  ``a`` and ``o`` default to the balanced
        choices :math:`\sqrt{b|\mu_{QK}|}` and :math:`\sqrt{\sqrt b|\mu_{OV}|}` (or 1
        if these vanish).
        """
        M = self.M
        idx = np.arange(M)
        mu_OV, mu_QK, w = float(mu_OV), float(mu_QK), float(w)
        out = {}
        if self.qk_factorized:
            if a is None:
                a = math.sqrt(self.b * abs(mu_QK)) or 1.0
            c = self.b * mu_QK / a
            W_Q = np.zeros((self.d, M))
            W_K = np.zeros((self.d, M))
            W_Q[idx, idx] = a
            W_K[M + idx, idx] = c
            out["W_Q"], out["W_K"] = W_Q, W_K
        else:
            W = np.zeros((self.d, self.d))
            W[idx, M + idx] = self.b * mu_QK
            out["W_QK"] = W
        C = np.eye(M) - 1.0 / M
        if self.ov_factorized:
            if o is None:
                o = math.sqrt(self._sqrt_b * abs(mu_OV)) or 1.0
            v = self._sqrt_b * mu_OV / o
            W_V = np.zeros((M, self.d))
            W_V[:, M:] = v * C + w
            out["W_O"], out["W_V"] = o * C, W_V
        else:
            W = np.zeros((M, self.d))
            W[:, M:] = self._sqrt_b * mu_OV * C
            out["W_OV"] = W
        return out

    # ------------------------------------------------------------------ #
    # forward pass
    # ------------------------------------------------------------------ #
    def circuits(self, params):
        r"""Return the effective circuits ``(W_QK, W_OV)``.

        :math:`W_{QK} = W_Q W_K^\top` and :math:`W_{OV} = W_O W_V` when
        factorized.  Leading batch axes are supported.
        """
        self._check_params(params, batched=True)
        return self._circuits(params)

    def _circuits(self, p):
        if self.qk_factorized:
            W_QK = p["W_Q"] @ np.swapaxes(p["W_K"], -1, -2)
        else:
            W_QK = np.asarray(p["W_QK"], dtype=float)
        if self.ov_factorized:
            W_OV = p["W_O"] @ p["W_V"]
        else:
            W_OV = np.asarray(p["W_OV"], dtype=float)
        return W_QK, W_OV

    def _scores_and_V(self, p):
        """Relevant scores S (..., M) and value block V (..., M, M), V[:, k] = z^(k)/alpha_k."""
        M, idx = self.M, self._idx
        if self.qk_factorized:
            S = np.einsum("...kr,...kr->...k", p["W_Q"][..., :M, :], p["W_K"][..., M:, :])
        else:
            S = p["W_QK"][..., idx, M + idx]
        S = S / self.b
        if self.ov_factorized:
            V = p["W_O"] @ p["W_V"][..., :, M:]
        else:
            V = p["W_OV"][..., :, M:]
        V = V / self._sqrt_b
        return S, V

    def _forward(self, p):
        """Shared forward pass; works with leading batch axes.

        Returns S, x, alpha, V, R, lk where ``x = S + log(m/n)``,
        ``R[..., j, k] = z_j^(k) - z_k^(k)`` (diagonal = -inf) and ``lk`` the
        per-class cross-entropy.
        """
        idx = self._idx
        S, V = self._scores_and_V(p)
        x = S + self._log_m_over_n
        alpha = expit(x)
        Z = V * alpha[..., None, :]
        R = Z - Z[..., idx, idx][..., None, :]
        R[..., idx, idx] = -np.inf
        # per-class CE = log(1 + sum_{j!=k} e^{R_jk}), evaluated stably (log1p regime)
        u = R.max(axis=-2)
        T = np.exp(R - u[..., None, :]).sum(axis=-2)
        lk = np.logaddexp(0.0, u + np.log(T))
        return S, x, alpha, V, R, lk

    def attention(self, params) -> np.ndarray:
        r"""Per-class attention on the relevant group,
        :math:`\alpha_k = m e^{S_k}/(m e^{S_k} + n)`, shape ``(..., M)``."""
        self._check_params(params, batched=True)
        S, _ = self._scores_and_V(params)
        return expit(S + self._log_m_over_n)

    def class_losses(self, params) -> np.ndarray:
        r"""Per-class cross-entropies
        :math:`\operatorname{logsumexp}(z^{(k)}) - z^{(k)}_k`, shape ``(..., M)``."""
        self._check_params(params, batched=True)
        return self._forward(params)[-1]

    def loss(self, params):
        r"""Population loss :math:`L = \frac1M\sum_k \mathrm{CE}(z^{(k)}, k)`.

        Returns a float (or an array over leading batch axes).
        """
        self._check_params(params, batched=True)
        L = self._forward(params)[-1].mean(axis=-1)
        return float(L) if np.ndim(L) == 0 else L

    # ------------------------------------------------------------------ #
    # gradient
    # ------------------------------------------------------------------ #
    def loss_and_grad(self, params):
        r"""Loss and its analytic gradient with respect to every trained matrix.

        With :math:`G_{jk} = (\mathrm{softmax}(z^{(k)})_j - \delta_{jk})/M`:

        .. math::

            \frac{\partial L}{\partial W_{OV}[j, r_k]} = \frac{\alpha_k G_{jk}}{\sqrt b},\qquad
            \frac{\partial L}{\partial W_{QK}[q_k, r_k]} = \frac{\alpha_k(1-\alpha_k)}{b}
                \sum_j G_{jk} V_{jk},

        with :math:`V = W_{OV}[:, r]/\sqrt b` (all other entries have zero
        gradient), and the chain rule for factors:
        :math:`\partial_{W_Q} = G_{QK} W_K`, :math:`\partial_{W_K} = G_{QK}^\top W_Q`,
        :math:`\partial_{W_O} = G_{OV} W_V^\top`, :math:`\partial_{W_V} = W_O^\top G_{OV}`.

        Returns
        -------
        loss : float
        grads : dict[str, ndarray]
            Same keys and shapes as ``params``.
        """
        self._check_params(params)
        vec = self.flatten(params)
        L, g = self._loss_and_grad_flat(vec)
        return L, self._unflatten_fast(g)

    def loss_and_grad_flat(self, vec):
        """Loss and gradient in the flat layout of :meth:`flatten`."""
        vec = np.asarray(vec, dtype=float)
        if vec.shape != (self.n_params,):
            raise ValueError(
                f"vec must have shape ({self.n_params},), got {vec.shape}"
            )
        return self._loss_and_grad_flat(vec)

    def _loss_and_grad_flat(self, vec):
        # hot path: no validation
        M, idx = self.M, self._idx
        p = self._unflatten_fast(vec)
        S, x, alpha, V, R, lk = self._forward(p)
        # G = (softmax - I)/M, computed without cancellation
        E = np.exp(R - lk[None, :])
        E[idx, idx] = np.expm1(-lk)
        E *= 1.0 / M
        # dL/dW_OV[:, r] block and dL/dW_QK[q_k, r_k]
        Gc = E * (alpha / self._sqrt_b)[None, :]
        h = np.einsum("jk,jk->k", E, V) * (expit(x) * expit(-x)) / self.b

        g = np.zeros(self.n_params)
        gp = self._unflatten_fast(g)
        if self.qk_factorized:
            gp["W_Q"][:M] = h[:, None] * p["W_K"][M:]
            gp["W_K"][M:] = h[:, None] * p["W_Q"][:M]
        else:
            gp["W_QK"][idx, M + idx] = h
        if self.ov_factorized:
            gp["W_O"][:] = Gc @ p["W_V"][:, M:].T
            gp["W_V"][:, M:] = p["W_O"].T @ Gc
        else:
            gp["W_OV"][:, M:] = Gc
        return float(lk.mean()), g

    def flow_rhs(self, vec) -> np.ndarray:
        r"""Gradient-flow velocity :math:`-\eta\odot\nabla L` in flat coordinates."""
        _, g = self._loss_and_grad_flat(np.asarray(vec, dtype=float))
        g *= self._rates
        np.negative(g, out=g)
        return g

    # ------------------------------------------------------------------ #
    # invariant family
    # ------------------------------------------------------------------ #
    def _project_circuits(self, W_QK, W_OV):
        M, idx = self.M, self._idx
        mu_QK = W_QK[..., idx, M + idx].mean(axis=-1) / self.b
        D = W_OV[..., :, M:]
        diag = D[..., idx, idx]
        off_mean = (D.sum(axis=-2) - diag) / (M - 1)
        mu_OV = (diag - off_mean).mean(axis=-1) / self._sqrt_b
        return mu_OV, mu_QK

    def project(self, params):
        r"""Least-squares coordinates ``(mu_OV, mu_QK)`` on the invariant family.

        .. math::

            \mu_{QK} = \frac{1}{Mb}\sum_k W_{QK}[q_k, r_k], \qquad
            \mu_{OV} = \frac{1}{M\sqrt b}\sum_k \Bigl(W_{OV}[k, r_k]
                        - \frac{1}{M-1}\sum_{j\ne k} W_{OV}[j, r_k]\Bigr),

        which are exactly the orthogonal (Frobenius) projections of the
        circuits onto :math:`\sum_k e_{q_k}e_{r_k}^\top` and
        :math:`\sum_k (e_k - \mathbf 1/M) e_{r_k}^\top`.  Returns floats, or
        arrays over leading batch axes.
        """
        self._check_params(params, batched=True)
        mu_OV, mu_QK = self._project_circuits(*self._circuits(params))
        if np.ndim(mu_OV) == 0:
            return float(mu_OV), float(mu_QK)
        return mu_OV, mu_QK

    def _roundoff_floors(self, p):
        """Norm below which a factorized circuit counts as zero (round-off of the product)."""
        tol = 64 * np.finfo(float).eps
        fro = lambda A: np.linalg.norm(A, axis=(-2, -1))  # noqa: E731
        fq = tol * fro(p["W_Q"]) * fro(p["W_K"]) if self.qk_factorized else 0.0
        fo = tol * fro(p["W_O"]) * fro(p["W_V"]) if self.ov_factorized else 0.0
        return fq, fo

    def _distance_circuits(self, W_QK, W_OV, floor_QK=0.0, floor_OV=0.0):
        M, idx = self.M, self._idx
        mu_OV, mu_QK = self._project_circuits(W_QK, W_OV)
        RQ = np.array(W_QK, dtype=float, copy=True)
        RQ[..., idx, M + idx] -= self.b * mu_QK[..., None]
        RO = np.array(W_OV, dtype=float, copy=True)
        RO[..., :, M:] -= (self._sqrt_b * mu_OV)[..., None, None] * (np.eye(M) - 1.0 / M)

        def rel(res, W, floor):
            nr = np.linalg.norm(res, axis=(-2, -1))
            nw = np.linalg.norm(W, axis=(-2, -1))
            ok = nw > floor
            return np.where(ok, nr / np.where(ok, nw, 1.0), 0.0)

        return np.maximum(rel(RQ, W_QK, floor_QK), rel(RO, W_OV, floor_OV))

    def distance_from_family(self, params):
        r"""Relative Frobenius distance of the circuits from the invariant family.

        .. math::

            \max\left(\frac{\|W_{QK} - b\mu_{QK}P\|_F}{\|W_{QK}\|_F},\;
                      \frac{\|W_{OV} - \sqrt b\mu_{OV}B\|_F}{\|W_{OV}\|_F}\right),

        with :math:`(\mu_{OV}, \mu_{QK})` from :meth:`project`,
        :math:`P = \sum_k e_{q_k}e_{r_k}^\top`,
        :math:`B = \sum_k (e_k - \mathbf 1/M)e_{r_k}^\top`.  A circuit that is
        zero -- for a factorized circuit: of norm at most
        :math:`64\,\varepsilon_{\rm mach}\|A\|_F\|B\|_F` for factors
        :math:`A, B`, i.e. zero up to the round-off of the product -- counts as
        distance 0.  Float, or array over leading batch axes.
        """
        self._check_params(params, batched=True)
        dist = self._distance_circuits(*self._circuits(params), *self._roundoff_floors(params))
        return float(dist) if np.ndim(dist) == 0 else dist

    def reduced_loss(self, mu_OV, mu_QK):
        r"""Loss on the family: :math:`\log(1 + (M-1)e^{-\alpha\mu_{OV}})`,
        :math:`\alpha = m e^{\mu_{QK}}/(m e^{\mu_{QK}} + n)` (vectorized)."""
        alpha = expit(np.asarray(mu_QK, dtype=float) + self._log_m_over_n)
        L = np.logaddexp(0.0, math.log(self.M - 1) - alpha * np.asarray(mu_OV, dtype=float))
        return float(L) if np.ndim(L) == 0 else L

    def summarize(self, vecs) -> dict:
        """Trajectory summaries for flat states ``vecs`` of shape ``(..., n_params)``.

        Returns a dict of arrays over the leading axes: ``loss``, ``alpha``
        (class mean), ``mu_OV``, ``mu_QK``, ``distance``.
        """
        p = self.unflatten(vecs)
        _, _, alpha, _, _, lk = self._forward(p)
        W_QK, W_OV = self._circuits(p)
        mu_OV, mu_QK = self._project_circuits(W_QK, W_OV)
        return {
            "loss": lk.mean(axis=-1),
            "alpha": alpha.mean(axis=-1),
            "mu_OV": mu_OV,
            "mu_QK": mu_QK,
            "distance": self._distance_circuits(W_QK, W_OV, *self._roundoff_floors(p)),
        }
