r"""Figure 3: the fixed-attention models trained by plain SGD at several attention levels.

:func:`train_fig3` trains the Figure-3 model (attention fixed at :math:`\alpha`
on the relevant tokens) for every :math:`\alpha` of a :class:`Fig3Config` at
once, stacked, and measures the loss and the incentive to sharpen on fresh
batches after every epoch.

The task is the authors' (:data:`numerics.experiments.task_sampling.AUTHORS`) in
the Figure-3 layout (:func:`sample_fig3_batches`): every batch holds
``batch_size / 4`` sequences of each class in random order, and the pair is
swapped: the last input token is the *label* token and the target is the *query*
token.  Attention is not learned: mass :math:`\alpha` is spread evenly over the
relevant positions (ids > 9) and :math:`1-\alpha` evenly over the others
(:func:`fixed_attention_context`).  Output circuit ``"collapsed"``:
:math:`z = W c + b`; ``"factorized"``: :math:`z = W_O (W_V c + b_V) + b_O`
(every PyTorch ``Linear`` has a bias by default), :func:`fig3_loss_and_grad`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from derivations.core.vocabulary import check_positive

from ..validation import check_int
from .cross_entropy import cross_entropy as _cross_entropy
from .precision import check_rate
from .sgd import eval_rng
from .sampler import Batch, counts_from_tickets, draw_context
from .stopping import MAX_SGD_STEPS, check_total_steps
from .task_sampling import AUTHORS

__all__ = ["ALPHA_STEP", "OUTPUT_CIRCUITS", "Fig3Config", "sample_fig3_batches", "fixed_attention_context",
           "fig3_init", "fig3_loss_and_grad", "train_fig3", "diverged_alphas"]

#: Figure-3 output circuits.
OUTPUT_CIRCUITS = ("collapsed", "factorized")
_V = AUTHORS.T
_RELEVANT = AUTHORS.relevant


#: Step of the finite difference of the incentive to sharpen.
ALPHA_STEP = 0.005


@dataclass(frozen=True)
class Fig3Config:
    """Settings of the published Figure-3 run (fixed attention)."""

    output_circuit: str = "collapsed"
    alphas: tuple = (0.2, 0.4, 0.6, 0.8, 1.0)
    epochs: int = 500
    steps_per_epoch: int = 250
    batch_size: int = 128
    seq_len: int = 64
    lr: float = 0.01
    eval_batches: int = 8
    seed: int = 1234

    def __post_init__(self):
        if self.output_circuit not in OUTPUT_CIRCUITS:
            raise ValueError(f"output_circuit must be one of {OUTPUT_CIRCUITS}, "
                             f"got {self.output_circuit!r}")
        alphas = tuple(float(a) for a in self.alphas)
        if not alphas:
            raise ValueError("alphas must be a non-empty list of numbers in (0, 1]")
        for a in alphas:
            if not (math.isfinite(a) and 0.0 < a <= 1.0):
                raise ValueError(f"alphas must lie in (0, 1], got {a!r}")
        object.__setattr__(self, "alphas", alphas)
        check_int("epochs", self.epochs, 1, MAX_SGD_STEPS)
        check_int("steps_per_epoch", self.steps_per_epoch, 1, MAX_SGD_STEPS)
        check_total_steps(self.epochs, self.steps_per_epoch)
        check_int("batch_size", self.batch_size, 4)
        if self.batch_size % AUTHORS.K:
            raise ValueError(f"batch_size must be a multiple of {AUTHORS.K}, got {self.batch_size}")
        check_int("seq_len", self.seq_len, 3)
        check_rate("lr", check_positive("lr", self.lr), "float64")
        check_int("eval_batches", self.eval_batches, 1)
        check_int("seed", self.seed, 0)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["alphas"] = list(self.alphas)
        return d


def sample_fig3_batches(rng: np.random.Generator, n_batches: int, batch_size: int = 128,
                        seq_len: int = 64) -> Batch:
    """Draw balanced Figure-3 batches of the authors' task.

    Parameters
    ----------
    rng : numpy.random.Generator
    n_batches : int
    batch_size : int
        A multiple of 4: ``batch_size / 4`` sequences of every class in a random order.
    seq_len : int

    Returns
    -------
    Batch
        The last input token (``query`` field, included in ``counts``) is the class's
        *label* token and ``target`` its *query* token.

    Raises
    ------
    ValueError
        A size out of range.
    """
    n_batches = check_int("n_batches", n_batches, 1)
    batch_size = check_int("batch_size", batch_size, AUTHORS.K)
    if batch_size % AUTHORS.K:
        raise ValueError(f"batch_size must be a multiple of {AUTHORS.K} for Figure 3, got {batch_size}")
    seq_len = check_int("seq_len", seq_len, 3)
    base = np.repeat(np.arange(AUTHORS.K), batch_size // AUTHORS.K)
    classes = rng.permuted(np.broadcast_to(base, (n_batches, batch_size)), axis=-1)
    last = AUTHORS.label[classes]
    counts = counts_from_tickets(AUTHORS, classes, draw_context(AUTHORS, rng, classes.shape, seq_len), last)
    return Batch(counts, last, AUTHORS.query[classes], classes)


def fixed_attention_context(counts, alpha):
    r"""Context vector of the fixed-attention model.

    Mass ``alpha`` spread evenly over the relevant positions (ids > 9) and
    ``1 - alpha`` evenly over all other input positions:
    :math:`c_v = \alpha n_v / R` for relevant :math:`v`, :math:`(1-\alpha) n_v/(T-R)`
    otherwise, with :math:`R` relevant positions out of :math:`T`.  A sequence
    without relevant positions puts all its mass on the others.

    ``counts`` ``(..., B, V)``; ``alpha`` scalar or ``(A,)`` (then the result is
    ``(A, ..., B, V)``).

    Parameters
    ----------
    counts : array_like, shape (..., B, V)
    alpha : float or array_like, shape (A,)

    Returns
    -------
    ndarray
        ``(..., B, V)``, or ``(A, ..., B, V)`` for an array ``alpha``.

    Raises
    ------
    ValueError
        An ``alpha`` outside ``[0, 1]``.
    """
    counts = np.asarray(counts, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    if np.any(~np.isfinite(alpha)) or np.any(alpha < 0) or np.any(alpha > 1):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    rel = counts[..., _RELEVANT].sum(-1, keepdims=True)
    total = counts.sum(-1, keepdims=True)
    other = total - rel
    shape = alpha.shape + (1,) * counts.ndim
    al = alpha.reshape(shape)
    has_rel = rel > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        w_rel = np.where(has_rel, al / rel, 0.0)
        w_oth = np.where(has_rel, (1.0 - al) / other, 1.0 / other)
        w_oth = np.where(other > 0, w_oth, 0.0)
    return counts * np.where(_RELEVANT, w_rel, w_oth)


def fig3_init(output_circuit: str, rng: np.random.Generator) -> dict:
    r"""PyTorch-default initialization of the Figure-3 output circuit.

    Every weight and bias i.i.d. :math:`U(-1/\sqrt{\text{fan\_in}}, 1/\sqrt{\text{fan\_in}})`
    with fan_in = 50; drawn in the order ``W, b`` (collapsed) or
    ``W_V, b_V, W_O, b_O`` (factorized).

    Parameters
    ----------
    output_circuit : {"collapsed", "factorized"}
    rng : numpy.random.Generator

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        Unknown output circuit.
    """
    if output_circuit not in OUTPUT_CIRCUITS:
        raise ValueError(f"output_circuit must be one of {OUTPUT_CIRCUITS}, got {output_circuit!r}")
    bound = 1.0 / math.sqrt(_V)
    names = (("W", "b") if output_circuit == "collapsed" else ("W_V", "b_V", "W_O", "b_O"))
    return {n: rng.uniform(-bound, bound, size=(_V, _V) if n.startswith("W") else (_V,)) for n in names}


def fig3_loss_and_grad(params: dict, context, target, *, grad: bool = True):
    r"""Mean cross-entropy of the Figure-3 model and its gradients.

    ``params`` from :func:`fig3_init` (optionally stacked ``(A, ...)`` over
    runs), ``context`` ``(..., B, V)`` from :func:`fixed_attention_context`,
    ``target`` ``(B,)`` or ``(..., B)`` ids.  Same conventions as
    :func:`numerics.experiments.models.loss_and_grad`.

    Parameters
    ----------
    params : dict
    context : array_like
    target : array_like of int
    grad : bool

    Returns
    -------
    loss : ndarray
    grads : dict or None
    """
    context = np.asarray(context, dtype=float)
    target = np.broadcast_to(np.asarray(target), context.shape[:-1])
    collapsed = "W" in params
    if collapsed:
        z = np.matmul(context, params["W"].mT) + params["b"][..., None, :]
    else:
        h = np.matmul(context, params["W_V"].mT) + params["b_V"][..., None, :]
        z = np.matmul(h, params["W_O"].mT) + params["b_O"][..., None, :]
    loss, p = _cross_entropy(z, target, None, grad)
    if not grad:
        return loss, None
    if collapsed:
        return loss, {"W": np.matmul(p.mT, context), "b": p.sum(axis=-2)}
    gh = np.matmul(p, params["W_O"])
    return loss, {"W_V": np.matmul(gh.mT, context), "b_V": gh.sum(axis=-2),
                  "W_O": np.matmul(p.mT, h), "b_O": p.sum(axis=-2)}


def _fig3_eval(params, rng, c, alphas):
    """Mean loss at ``alphas`` and at ``alphas + ALPHA_STEP`` on the same fresh batches."""
    b = sample_fig3_batches(rng, c.eval_batches, c.batch_size, c.seq_len)
    counts = b.counts.reshape(-1, _V)
    tgt = b.target.reshape(-1)
    out = []
    for shift in (0.0, ALPHA_STEP):
        al = np.minimum(alphas + shift, 1.0)
        ctx = fixed_attention_context(counts, al)               # (A, N, V)
        loss, _ = fig3_loss_and_grad(params, ctx, tgt, grad=False)
        out.append(loss)
    return out


def train_fig3(config: Fig3Config, *, progress=None) -> dict:
    r"""Train the fixed-attention model at every :math:`\alpha` (stacked) and measure.

    Every :math:`\alpha` uses the same seed, hence the same initialization (as in
    the notebooks, which reseed PyTorch per :math:`\alpha`) and the same batches
    (the notebooks draw theirs from NumPy's global stream, not reseeded: other
    batches per :math:`\alpha`): both come from ``default_rng(seed)``; evaluation batches from
    :func:`~numerics.experiments.sgd.eval_rng` ``(seed)``.  At epoch 0 and after every epoch the mean
    loss over ``eval_batches`` fresh batches is measured at :math:`\alpha` and
    at :math:`\alpha + 0.005` (same batches); the incentive to sharpen is
    :math:`(L(\alpha) - L(\alpha + 0.005))/0.005`, defined 0 at :math:`\alpha = 1` (where the loss is finite).

    Parameters
    ----------
    config : Fig3Config
    progress : callable, optional
        Called as ``progress(1)`` after every epoch.

    Returns
    -------
    dict
        In the order of ``fig3.json``: ``alpha`` (list), ``loss`` and ``incentive``
        (``[alpha][epoch]``, epochs ``0..E``), ``final_loss`` (per alpha), ``loss_shifted``
        (as ``loss``) and ``train_loss`` (``[alpha][epoch]``, the mean training loss of
        epochs ``1..E``); an alpha
        whose training diverged has non-finite losses and incentives from there on
        (:func:`diverged_alphas`).

    Raises
    ------
    ValueError
        ``config`` not a :class:`Fig3Config`.
    """
    if not isinstance(config, Fig3Config):
        raise ValueError(f"config must be a Fig3Config, got {type(config).__name__}")
    c = config
    alphas = np.asarray(c.alphas)
    A = len(alphas)
    rng = np.random.default_rng(c.seed)
    init = fig3_init(c.output_circuit, rng)
    params = {k: np.repeat(v[None], A, axis=0) for k, v in init.items()}
    erng = eval_rng(c.seed)
    train = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):   # divergence is reported, not warned
        measured = [_fig3_eval(params, erng, c, alphas)]
        for epoch in range(c.epochs):
            b = sample_fig3_batches(rng, c.steps_per_epoch, c.batch_size, c.seq_len)
            losses = np.empty((A, c.steps_per_epoch))
            for k in range(c.steps_per_epoch):
                ctx = fixed_attention_context(b.counts[k], alphas)
                loss, grads = fig3_loss_and_grad(params, ctx, b.target[k])
                losses[:, k] = loss
                for key, g in grads.items():
                    g *= c.lr
                    params[key] -= g
            train.append(losses.sum(axis=1) / c.steps_per_epoch)
            measured.append(_fig3_eval(params, erng, c, alphas))
            if progress is not None:
                progress(1)
    L, Lp = np.array(measured).transpose(1, 2, 0)       # (alpha, epoch) at alpha and at alpha + ALPHA_STEP
    inc = (L - Lp) / ALPHA_STEP
    sharpest = alphas >= 1.0
    inc[sharpest] = np.where(np.isfinite(L[sharpest]), 0.0, np.nan)     # (NaN where it diverged, as any alpha's)
    return {"alpha": [float(a) for a in alphas], "loss": L.tolist(), "incentive": inc.tolist(),
            "final_loss": L[:, -1].tolist(), "loss_shifted": Lp.tolist(),
            "train_loss": np.array(train).T.tolist()}


def diverged_alphas(result: dict, steps_per_epoch: int) -> list:
    """The alphas of a :func:`train_fig3` result whose training diverged: a training or measured loss
    that is not finite (its parameters are then not finite, and stay so).

    Parameters
    ----------
    result : dict
        Of :func:`train_fig3` (``None`` for a number that is not finite, as in its JSON, is allowed).
    steps_per_epoch : int

    Returns
    -------
    list of dict
        ``{"alpha", "steps", "status": "diverged"}`` per such alpha, in order: ``steps``, the SGD
        steps trained when a loss was first not finite.
    """
    def finite(x):
        return x is not None and math.isfinite(x)

    out = []
    for a, measured, trained in zip(result["alpha"], result["loss"], result["train_loss"]):
        epochs = [e for e, x in enumerate(measured) if not finite(x)]
        epochs += [e + 1 for e, x in enumerate(trained) if not finite(x)]
        if epochs:
            out.append({"alpha": a, "steps": min(epochs) * steps_per_epoch, "status": "diverged"})
    return out
