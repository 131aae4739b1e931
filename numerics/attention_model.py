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
The structured initialization, the family coordinates
:math:`(\mu_{OV}, \mu_{QK})` of arbitrary parameters and the distance from
the family live beside the model, in :mod:`numerics.invariant_family`.

Everything is vectorized over classes (no Python loop over :math:`k`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from derivations.vocabulary import CIRCUITS, PAPER_SETTING, ov_factorized, qk_factorized

from .validation import check_model_parameters, check_parameterization, check_positive

__all__ = ["AttentionModel", "MAX_CLASSES"]

#: Largest number of classes of the full model (its matrices have 4 M^2 entries).
MAX_CLASSES = 2000


# --------------------------------------------------------------------------- #
# model
# --------------------------------------------------------------------------- #
class _FlatGradientFlow:
    """Gradient flow in flat coordinates, shared by :class:`AttentionModel` and
    :class:`numerics.task_model.TaskModel` (both provide ``_loss_and_grad_flat``
    and the per-entry rates ``_rates``)."""

    def flow_rhs(self, vec) -> np.ndarray:
        r"""Gradient-flow velocity :math:`-\eta\odot\nabla L` in flat coordinates."""
        _, g = self._loss_and_grad_flat(np.asarray(vec, dtype=float))
        g *= self._rates
        np.negative(g, out=g)
        return g


@dataclass(frozen=True)
class AttentionModel(_FlatGradientFlow):
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
    m: float = float(PAPER_SETTING["m"])
    n: float = float(PAPER_SETTING["n"])
    b: float = float(PAPER_SETTING["b"])
    M: int = PAPER_SETTING["M"]
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
        m=PAPER_SETTING["m"],
        n=PAPER_SETTING["n"],
        b=PAPER_SETTING["b"],
        M=PAPER_SETTING["M"],
        eta_QK=1.0,
        eta_OV=1.0,
        eta_Q=None,
        eta_K=None,
        eta_O=None,
        eta_V=None,
    ):
        setattr_ = object.__setattr__
        setattr_(self, "parameterization", check_parameterization(parameterization))
        m, n, b, M = check_model_parameters(m, n, b, M)
        if M > MAX_CLASSES:
            raise ValueError(f"M must be an integer in [2, {MAX_CLASSES}] for the full model "
                             f"(it has about 6 M^2 parameters); got {M!r}")
        for name, value in (("m", m), ("n", n), ("b", b), ("M", M)):
            setattr_(self, name, value)
        eta_QK = check_positive("eta_QK", eta_QK)
        eta_OV = check_positive("eta_OV", eta_OV)
        setattr_(self, "eta_QK", eta_QK)
        setattr_(self, "eta_OV", eta_OV)
        for name, val, default in (
            ("eta_Q", eta_Q, eta_QK),
            ("eta_K", eta_K, eta_QK),
            ("eta_O", eta_O, eta_OV),
            ("eta_V", eta_V, eta_OV),
        ):
            setattr_(self, name, default if val is None else check_positive(name, val))

        Mi, d = self.M, 2 * self.M
        shapes = {
            "W_QK": (d, d),
            "W_Q": (d, Mi),
            "W_K": (d, Mi),
            "W_OV": (Mi, d),
            "W_O": (Mi, Mi),
            "W_V": (Mi, d),
        }
        rate_of = self.rates()
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
        return qk_factorized(self.parameterization)

    @property
    def ov_factorized(self) -> bool:
        """True if the output circuit is factorized (``W_OV = W_O W_V``)."""
        return ov_factorized(self.parameterization)

    @property
    def keys(self) -> tuple:
        """Names of the trained matrices, in flattening order."""
        P = self.parameterization
        return tuple(k for c in CIRCUITS.values()
                     for k in (c.factors if c.factorized(P) else (c.matrix,)))

    @property
    def shapes(self) -> dict:
        """``{key: shape}`` of the trained matrices."""
        return {k: shp for k, shp, _, _ in self._layout}

    @property
    def n_params(self) -> int:
        """Total number of scalar parameters (length of :meth:`flatten`)."""
        return self._layout[-1][3]

    def rates(self) -> dict:
        """``{key: learning rate}`` of the trained matrices (names from the
        circuit table :data:`derivations.vocabulary.CIRCUITS`)."""
        rate_name = {}
        for c in CIRCUITS.values():
            rate_name[c.matrix] = c.rate
            rate_name.update(zip(c.factors, c.factor_rates))
        return {k: getattr(self, rate_name[k]) for k in self.keys}

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

    def random_params(self, scale=1e-2, seed=0) -> dict:
        r"""Random parameters: every entry i.i.d. :math:`\mathcal N(0, \mathrm{scale}^2)`.

        (The structured initialization, a point of the invariant family, is
        :func:`numerics.invariant_family.structured_params`.)

        Parameters
        ----------
        scale : float
            Standard deviation (> 0, finite).
        seed : int, numpy.random.Generator or None
            Seed for :func:`numpy.random.default_rng`.
        """
        scale = check_positive("scale", scale)
        rng = np.random.default_rng(seed)
        return {k: scale * rng.standard_normal(shp) for k, shp, _, _ in self._layout}

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

    def attention_and_class_losses(self, params):
        """``(attention, class_losses)`` of :meth:`attention` and
        :meth:`class_losses` from one forward pass (leading batch axes allowed)."""
        self._check_params(params, batched=True)
        _, _, alpha, _, _, lk = self._forward(params)
        return alpha, lk

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

    def _loss_flat(self, vec):
        # hot path (events): the loss alone, no validation
        return float(self._forward(self._unflatten_fast(vec))[-1].mean())

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

