r"""Memory the experiments' arrays take at once, estimated from their sizes before any work.

The trainers draw one epoch's batches at a time and evaluate on
``eval_batches`` fresh batches in one pass; with huge sizes (``--seq-len``,
``--batch-size``, ``--steps-per-epoch``, ``--eval-batches`` or many stacked
seeds) those arrays alone would exceed the machine's memory. The commands
compare these estimates with the machine's memory and refuse, naming the
amount, instead of ending in a ``MemoryError`` after the work has started.

The estimates count the big arrays of :func:`numerics.experiments.sgd.train_fig2`
(per step of an epoch and per stacked seed: the tickets and their stacked
copy, the ``uint16`` counts, the class, query, target, slot and index arrays
and the one-hot query matrix) and of the evaluation (counts, attention, logits
and log-probabilities of every sequence); they are upper bounds within a small
factor, not exact.

>>> from numerics.experiments.memory import fig2_bytes, fig3_bytes
>>> from numerics.experiments.sgd import Fig2Config, Fig3Config
>>> fig2_bytes(Fig2Config(), 3) < 200 * 2 ** 20      # the published run: well under 200 MiB
True
>>> fig3_bytes(Fig3Config()) < 200 * 2 ** 20
True
"""
from __future__ import annotations

from . import data

__all__ = ["fig2_bytes", "fig3_bytes", "PARAMS_PER_SEED"]

_V = data.V
#: Bytes of one stacked seed's parameters: up to 4 matrices x (weights, steps, copies).
PARAMS_PER_SEED = 16 * _V * _V * 8


def fig2_bytes(config, seeds_per_job: int) -> int:
    """Bytes of the largest arrays :func:`~numerics.experiments.sgd.train_fig2` and the
    evaluation hold at once for one job of ``seeds_per_job`` stacked seeds."""
    c = config
    steps = min(c.steps_per_epoch, c.total_steps)
    st = getattr(c, "sampled_task", None)
    if st is not None:
        return _task_bytes(c, st, steps, seeds_per_job)
    per_sequence = 4 * (c.seq_len - 2) + 2 * _V + 88
    train = steps * seeds_per_job * c.batch_size * per_sequence
    evaluation = c.eval_batches * c.batch_size * (2 * (c.seq_len - 2) + 9 * 8 * _V)
    return train + evaluation + seeds_per_job * PARAMS_PER_SEED


def _task_bytes(c, st, steps, seeds_per_job) -> int:
    """:func:`fig2_bytes` of an engine task (:mod:`numerics.experiments.task_model`): int64 tickets
    and tokens, float64 counts over its ``T`` types, matrices of at most ``max(d, n_out) x d``."""
    width = max(st.T, st.n_out)
    per_sequence = 24 * (c.seq_len - 2) + 16 * width + 88
    train = steps * seeds_per_job * c.batch_size * per_sequence
    evaluation = c.eval_batches * c.batch_size * (24 * (c.seq_len - 2) + 9 * 8 * width)
    return train + evaluation + seeds_per_job * 16 * 8 * max(st.d, st.n_out) * st.d


def fig3_bytes(config) -> int:
    """Bytes of the largest arrays :func:`~numerics.experiments.sgd.train_fig3` holds at once."""
    c = config
    alphas = len(c.alphas)
    train = c.steps_per_epoch * c.batch_size * (2 * (c.seq_len - 2) + 8 * _V + 24)
    step = 4 * alphas * c.batch_size * _V * 8
    evaluation = c.eval_batches * c.batch_size * (2 * (c.seq_len - 2) + 8 * _V + 6 * 8 * alphas * _V)
    return train + step + evaluation + alphas * PARAMS_PER_SEED
