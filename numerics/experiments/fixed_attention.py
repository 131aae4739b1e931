r"""Figure 3: the fixed-attention models trained by plain SGD at several attention levels.

:func:`train_fig3` trains the Figure-3 model (attention fixed at :math:`\alpha`
on the relevant tokens) for every :math:`\alpha` of a :class:`Fig3Config` at
once, stacked, and measures the loss and the incentive to sharpen on fresh
batches after every epoch. (Moved out of :mod:`numerics.experiments.sgd`,
which still exports these names.)
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..validation import check_int, check_positive
from . import data, models

__all__ = ["ALPHA_STEP", "Fig3Config", "train_fig3"]


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
        if self.output_circuit not in models.OUTPUT_CIRCUITS:
            raise ValueError(f"output_circuit must be one of {models.OUTPUT_CIRCUITS}, "
                             f"got {self.output_circuit!r}")
        alphas = tuple(float(a) for a in self.alphas)
        if not alphas:
            raise ValueError("alphas must be a non-empty list of numbers in (0, 1]")
        for a in alphas:
            if not (math.isfinite(a) and 0.0 < a <= 1.0):
                raise ValueError(f"alpha must lie in (0, 1], got {a!r}")
        object.__setattr__(self, "alphas", alphas)
        check_int("epochs", self.epochs, 1)
        check_int("steps_per_epoch", self.steps_per_epoch, 1)
        check_int("batch_size", self.batch_size, 4)
        if self.batch_size % data.NUM_CLASSES:
            raise ValueError(f"batch_size must be a multiple of 4, got {self.batch_size}")
        check_int("seq_len", self.seq_len, 3)
        check_positive("lr", self.lr)
        check_int("eval_batches", self.eval_batches, 1)
        check_int("seed", self.seed, 0)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["alphas"] = list(self.alphas)
        return d


def _fig3_eval(params, rng, c, alphas):
    """Mean loss at ``alphas`` and at ``alphas + ALPHA_STEP`` on the same fresh batches."""
    b = data.sample_fig3_batches(rng, c.eval_batches, c.batch_size, c.seq_len)
    counts = b.counts.reshape(-1, data.V)
    tgt = b.target.reshape(-1)
    out = []
    for shift in (0.0, ALPHA_STEP):
        al = np.minimum(alphas + shift, 1.0)
        ctx = models.fixed_attention_context(counts, al)               # (A, N, V)
        loss, _ = models.fig3_loss_and_grad(params, ctx, tgt, grad=False)
        out.append(loss)
    return out


def train_fig3(config: Fig3Config, *, progress=None) -> dict:
    r"""Train the fixed-attention model at every :math:`\alpha` (stacked) and measure.

    Every :math:`\alpha` uses the same seed, hence (as in the notebooks, which
    reseed per :math:`\alpha`) the same initialization and the same batches:
    both come from ``default_rng(seed)``; evaluation batches from
    :func:`~numerics.experiments.sgd.eval_rng` ``(seed)``.  At epoch 0 and after every epoch the mean
    loss over ``eval_batches`` fresh batches is measured at :math:`\alpha` and
    at :math:`\alpha + 0.005` (same batches); the incentive to sharpen is
    :math:`(L(\alpha) - L(\alpha + 0.005))/0.005`, defined 0 at :math:`\alpha = 1`.

    Returns a dict with ``alpha`` (list), ``loss`` and ``loss_shifted`` and
    ``incentive`` (``[alpha][epoch]``, epochs ``0..E``), ``train_loss``
    (``[alpha][epoch]`` mean training loss of epochs ``1..E``) and
    ``final_loss`` (per alpha).
    """
    from .sgd import eval_rng    # the seeds' evaluation streams are sgd's (which imports this module)

    c = config
    alphas = np.asarray(c.alphas)
    A = len(alphas)
    rng = np.random.default_rng(c.seed)
    init = models.fig3_init(c.output_circuit, rng)
    params = {k: np.repeat(v[None], A, axis=0) for k, v in init.items()}
    erng = eval_rng(c.seed)
    L, Lp = [], []
    l0, l1 = _fig3_eval(params, erng, c, alphas)
    L.append(l0)
    Lp.append(l1)
    train = []
    for epoch in range(c.epochs):
        b = data.sample_fig3_batches(rng, c.steps_per_epoch, c.batch_size, c.seq_len)
        losses = np.empty((A, c.steps_per_epoch))
        for k in range(c.steps_per_epoch):
            ctx = models.fixed_attention_context(b.counts[k], alphas)
            loss, grads = models.fig3_loss_and_grad(params, ctx, b.target[k])
            losses[:, k] = loss
            for key, g in grads.items():
                g *= c.lr
                params[key] -= g
        train.append(losses.sum(axis=1) / c.steps_per_epoch)
        l0, l1 = _fig3_eval(params, erng, c, alphas)
        L.append(l0)
        Lp.append(l1)
        if progress is not None:
            progress(1)
    L = np.array(L).T
    Lp = np.array(Lp).T
    inc = (L - Lp) / ALPHA_STEP
    inc[alphas >= 1.0] = 0.0
    return {"alpha": [float(a) for a in alphas], "loss": L.tolist(), "loss_shifted": Lp.tolist(),
            "incentive": inc.tolist(), "train_loss": np.array(train).T.tolist(),
            "final_loss": L[:, -1].tolist()}
