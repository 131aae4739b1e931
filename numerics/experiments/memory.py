r"""Memory the experiments' arrays take at once, estimated from their sizes before any work.

The trainers draw one epoch's batches at a time and evaluate on
``eval_batches`` fresh batches in one pass; with huge sizes (``--seq-len``,
``--batch-size``, ``--steps-per-epoch``, ``--eval-batches`` or many stacked
seeds) those arrays alone would exceed the machine's memory. The commands
compare these estimates with the machine's memory and refuse, naming the
amount, instead of ending in a ``MemoryError`` after the work has started.

The estimates count the big arrays of training and evaluation (:func:`fig2_bytes`,
:func:`fig3_bytes`); they are upper bounds within a small factor, not exact.

>>> from numerics.experiments.memory import fig2_bytes, fig3_bytes
>>> from numerics.experiments.sgd import Fig2Config
>>> from numerics.experiments.fixed_attention import Fig3Config
>>> fig2_bytes(Fig2Config(), 3) < 200 * 2 ** 20      # the published run: well under 200 MiB
True
>>> fig3_bytes(Fig3Config()) < 200 * 2 ** 20
True
"""
from __future__ import annotations

from .task_sampling import AUTHORS

__all__ = ["fig2_bytes", "fig3_bytes", "PARAMS_PER_SEED"]

_V = AUTHORS.T


def _params_bytes(st) -> int:
    """Bytes of one stacked run's parameters: up to 4 matrices x (weights, steps, copies)."""
    return 16 * 8 * max(st.d, st.n_out) * st.d


#: Bytes of one stacked seed's parameters in the authors' task.
PARAMS_PER_SEED = _params_bytes(AUTHORS)


def fig2_bytes(config, seeds_per_job: int) -> int:
    """Bytes of the largest arrays of one job's training and evaluation.

    Parameters
    ----------
    config : numerics.experiments.sgd.Fig2Config
    seeds_per_job : int
        Runs stacked in the job.

    Returns
    -------
    int
        For :func:`~numerics.experiments.sgd.train_fig2` and the evaluation: the tickets and
        their stacked copy, the ``uint16`` counts over the task's ``T`` types, the index arrays
        and the one-hot query matrix per step and run; counts, attention, logits and
        log-probabilities per evaluated sequence; the stacked parameters.
    """
    c, st = config, config.sampled_task
    steps = min(c.steps_per_epoch, c.total_steps)
    ticket = st.ticket_dtype.itemsize
    width = max(st.T, st.n_out)
    per_sequence = 2 * ticket * (c.seq_len - 2) + 2 * st.T + 88
    train = steps * seeds_per_job * c.batch_size * per_sequence
    evaluation = c.eval_batches * c.batch_size * (ticket * (c.seq_len - 2) + 9 * 8 * width)
    return train + evaluation + seeds_per_job * _params_bytes(st)


def fig3_bytes(config) -> int:
    """Bytes of the largest arrays :func:`~numerics.experiments.fixed_attention.train_fig3` holds at once.

    Parameters
    ----------
    config : numerics.experiments.fixed_attention.Fig3Config

    Returns
    -------
    int
    """
    c = config
    alphas = len(c.alphas)
    train = c.steps_per_epoch * c.batch_size * (2 * (c.seq_len - 2) + 8 * _V + 24)
    step = 4 * alphas * c.batch_size * _V * 8
    evaluation = c.eval_batches * c.batch_size * (2 * (c.seq_len - 2) + 8 * _V + 6 * 8 * alphas * _V)
    return train + step + evaluation + alphas * PARAMS_PER_SEED
