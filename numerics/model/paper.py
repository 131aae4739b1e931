r"""The paper's single-layer self-attention model: the general model on the paper's task, with
a sparse :math:`O(M^2)` forward pass and gradient.

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
the family live beside the model, in :mod:`numerics.model.family`.

:class:`AttentionModel` is :class:`numerics.model.attention.TaskModel` on
:func:`numerics.model.instance.paper_instance` (layout, rates, checks and
circuits are the general model's); it overrides only the forward pass and
the gradient, which on the paper's structure touch just the :math:`M\times M`
blocks :math:`W_{QK}[q, r]` and :math:`W_{OV}[:, r]`. Everything is vectorized
over classes (no Python loop over :math:`k`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from derivations.core.vocabulary import PAPER_SETTING, check_classes, check_model_parameters, check_parameterization

from .attention import TaskModel
from .instance import paper_instance

__all__ = ["AttentionModel", "MAX_CLASSES", "check_full_model_classes"]

#: Largest number of classes of the full model (its matrices have 4 M^2 entries).
MAX_CLASSES = 2000


def check_full_model_classes(M, name="M") -> int:
    """``M`` as an int if it is an integer in [2, :data:`MAX_CLASSES`], the classes the full model
    holds; else ValueError naming ``name`` and the range.

    Parameters
    ----------
    M : int or float
        The number of classes.
    name : str, optional
        The parameter's name, for the message.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        ``M`` not an integer (or integer-valued float) in [2, :data:`MAX_CLASSES`].
    """
    try:
        value = check_classes(M)
    except ValueError:
        value = None
    if value is None or value > MAX_CLASSES:
        raise ValueError(f"{name} must be an integer in [2, {MAX_CLASSES}] for the full model "
                         f"(it has about 6 M^2 parameters); got {M!r}")
    return value

_FIELDS = ("parameterization", "m", "n", "b", "M", "eta_QK", "eta_OV", "eta_Q", "eta_K", "eta_O",
           "eta_V")


class AttentionModel(TaskModel):
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
        Number of classes (>= 2, at most :data:`MAX_CLASSES`); embedding
        dimension :math:`d = 2M`.
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

    (the layout of :class:`~numerics.model.attention.TaskModel`). Unlike the
    general model, :meth:`attention` is the per-class attention on the
    relevant group, shape ``(..., M)`` (the general model's
    :meth:`~numerics.model.attention.TaskModel.relevant_attention`); its
    family coordinates are :func:`numerics.model.family.summarize`. The
    instance (:func:`~numerics.model.instance.paper_instance`, with its
    :math:`(2M+1)\times 2M` embedding matrix) is built only when a general
    method needs it.
    """

    def __init__(self, parameterization="CACO", *, m=PAPER_SETTING["m"], n=PAPER_SETTING["n"],
                 b=PAPER_SETTING["b"], M=PAPER_SETTING["M"], eta_QK=1.0, eta_OV=1.0,
                 eta_Q=None, eta_K=None, eta_O=None, eta_V=None):
        etas = dict(eta_QK=eta_QK, eta_OV=eta_OV, eta_Q=eta_Q, eta_K=eta_K, eta_O=eta_O,
                    eta_V=eta_V)
        check_parameterization(parameterization)
        m, n, b, M = check_model_parameters(m, n, b, M)
        M = check_full_model_classes(M)
        self.m, self.n, self.b, self.M = m, n, b, M
        self._setup(parameterization, (2 * M, M, M, M), etas)
        # constants used by the hot path
        self._idx = np.arange(M)
        self._sqrt_b = math.sqrt(b)
        self._log_m_over_n = math.log(m) - math.log(n)

    def __getattr__(self, name):
        # the general forward pass's constants, bound to the paper's instance on first use
        if name in ("instance", "_E", "_Xq", "_logc", "_pi", "_rows"):
            self._bind(paper_instance(M=self.M, m=self.m, n=self.n, b=self.b))
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self):
        return f"AttentionModel({', '.join(f'{k}={getattr(self, k)!r}' for k in _FIELDS)})"

    def __eq__(self, other):
        return type(other) is type(self) and all(getattr(self, k) == getattr(other, k)
                                                 for k in _FIELDS)

    def __hash__(self):
        return hash(tuple(getattr(self, k) for k in _FIELDS))

    @property
    def d(self) -> int:
        """Embedding dimension :math:`d = 2M`."""
        return 2 * self.M

    # ------------------------------------------------------------------ #
    # forward pass (the M x M blocks only)
    # ------------------------------------------------------------------ #
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
        :math:`\alpha_k = m e^{S_k}/(m e^{S_k} + n)`.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        ndarray, shape (..., M)
        """
        self._check_params(params, batched=True)
        S, _ = self._scores_and_V(params)
        return expit(S + self._log_m_over_n)

    relevant_attention = attention

    def alpha(self, params):
        """Class mean of :meth:`attention`.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        float or ndarray
            A float, or an array over the leading batch axes.
        """
        al = self.attention(params).mean(axis=-1)
        return float(al) if np.ndim(al) == 0 else al

    def class_losses(self, params) -> np.ndarray:
        r"""Per-class cross-entropies
        :math:`\operatorname{logsumexp}(z^{(k)}) - z^{(k)}_k`.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        ndarray, shape (..., M)
        """
        self._check_params(params, batched=True)
        return self._forward(params)[-1]

    def attention_and_class_losses(self, params):
        """:meth:`attention` and :meth:`class_losses` from one forward pass.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        attention, class_losses : ndarray, shape (..., M)
        """
        self._check_params(params, batched=True)
        _, _, alpha, _, _, lk = self._forward(params)
        return alpha, lk

    def loss(self, params):
        r"""Population loss :math:`L = \frac1M\sum_k \mathrm{CE}(z^{(k)}, k)`.

        Parameters
        ----------
        params : dict
            ``{key: matrix}`` (:attr:`keys`); leading batch axes allowed.

        Returns
        -------
        float or ndarray
            A float, or an array over the leading batch axes.
        """
        self._check_params(params, batched=True)
        L = self._forward(params)[-1].mean(axis=-1)
        return float(L) if np.ndim(L) == 0 else L

    # ------------------------------------------------------------------ #
    # gradient
    # ------------------------------------------------------------------ #
    def _loss_flat(self, vec):
        # hot path (events): the loss alone, no validation
        return float(self._forward(self._unflatten_fast(vec))[-1].mean())

    def _loss_and_grad_flat(self, vec):
        r"""Loss and sparse gradient. With :math:`G_{jk} = (\mathrm{softmax}(z^{(k)})_j - \delta_{jk})/M`:

        .. math::

            \frac{\partial L}{\partial W_{OV}[j, r_k]} = \frac{\alpha_k G_{jk}}{\sqrt b},\qquad
            \frac{\partial L}{\partial W_{QK}[q_k, r_k]} = \frac{\alpha_k(1-\alpha_k)}{b}
                \sum_j G_{jk} V_{jk},

        with :math:`V = W_{OV}[:, r]/\sqrt b` (all other entries have zero
        gradient), and the chain rule for factors.
        """
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
