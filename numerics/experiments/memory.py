r"""Memory the experiments' arrays take at once, estimated from their sizes before any work.

The trainers draw one epoch's batches at a time and evaluate on
``eval_batches`` fresh batches in one pass; with huge sizes (``--seq-len``,
``--batch-size``, ``--steps-per-epoch``, ``--eval-batches`` or many stacked
seeds) those arrays alone would exceed the machine's memory. The commands
compare these estimates with the machine's memory and refuse, naming the
amount, instead of ending in a ``MemoryError`` after the work has started.

:func:`check_memory` refuses settings whose estimate exceeds :func:`memory_budget`.
The estimates count the big arrays of training and evaluation (:func:`fig2_bytes`,
:func:`fig3_bytes`); they are upper bounds within a small factor, not exact.

>>> from numerics.experiments.memory import fig2_bytes, fig3_bytes
>>> from numerics.experiments.sgd import Fig2Config
>>> from numerics.experiments.fixed_attention import Fig3Config
>>> fig2_bytes(Fig2Config(), 3) < 400 * 2 ** 20      # the published run: well under 400 MiB
True
>>> fig3_bytes(Fig3Config()) < 200 * 2 ** 20
True
"""
from __future__ import annotations

import decimal
import os

from derivations.core.cli import UsageError

from .proxies import BINS
from .task_sampling import AUTHORS

__all__ = ["fig2_bytes", "fig3_bytes", "memory_budget", "shown_size", "processes", "check_memory"]

_V = AUTHORS.T


def _params_bytes(st) -> int:
    """Bytes of one stacked run's parameters: up to 4 matrices x (weights, steps, copies)."""
    return 16 * 8 * max(st.d, st.n_out) * st.d


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
        log-probabilities per evaluated sequence, and for each of the faithfulness proxies'
        ``2 len(BINS)`` variants of it (:func:`~numerics.experiments.proxies.faithfulness`, one
        forward pass on them all) its counts twice and those arrays again; the stacked parameters.
    """
    c, st = config, config.sampled_task
    steps = min(c.steps_per_epoch, c.total_steps)
    ticket = st.ticket_dtype.itemsize
    width = max(st.T, st.n_out)
    per_sequence = 2 * ticket * (c.seq_len - 2) + 2 * st.T + 88
    train = steps * seeds_per_job * c.batch_size * per_sequence
    forward = 9 * 8 * width
    variants = 2 * len(BINS) * (2 * 8 * st.T + forward)
    evaluation = c.eval_batches * c.batch_size * (ticket * (c.seq_len - 2) + forward + variants)
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
    return train + step + evaluation + alphas * _params_bytes(AUTHORS)


def memory_budget() -> int:
    """Bytes one command may plan to hold at once: half the machine's physical memory."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):   # pragma: no cover - no sysconf
        return 8 << 30


def shown_size(n: float) -> str:
    """A number of bytes as the messages name it.

    Parameters
    ----------
    n : int or float
        Bytes: any size, an integer beyond a float's range too (from huge options).

    Returns
    -------
    str

    >>> shown_size(512), shown_size(3 * 2 ** 30), shown_size(10 ** 400)
    ('512 bytes', '3.0 GiB', '8.88e+384 PiB')
    """
    n = decimal.Decimal(n)          # every int and float, exactly: no OverflowError
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            break
        n /= 1024
    if unit == "bytes":
        return f"{n:.0f} bytes"
    return f"{n:.1f} {unit}" if n < 10 ** 9 else f"{n:.3g} {unit}"


def processes(n_workers: int, n_jobs: int, address) -> int:
    """How many jobs' arrays this machine holds at once: one per local process running them,
    one when a Dask cluster runs them.

    Parameters
    ----------
    n_workers, n_jobs : int
    address : str or None
        The Dask scheduler.

    Returns
    -------
    int
        At least 1.
    """
    return 1 if address is not None else max(1, min(n_workers, n_jobs))


def check_memory(needed: float, command: str, config, held: str, seq_len=None) -> None:
    """Refuse, naming the memory and the sizes, settings whose arrays would not fit (before any work).

    Parameters
    ----------
    needed : float
        Bytes held at once.
    command : str
        The command, as the message names it.
    config : numerics.experiments.sgd.Fig2Config or numerics.experiments.fixed_attention.Fig3Config
        Its sizes (``seq_len``, ``batch_size``, ``steps_per_epoch``, ``eval_batches``), named by their options.
    held : str
        What is held besides, as the message names it (``"5 alphas"``).
    seq_len : callable, optional
        ``seq_len()`` names the sequence length in the message, called only for a refusal (default
        ``--seq-len N``; a task's own length names where it comes from:
        :func:`numerics.experiments.commands.task_options.seq_len_name`).

    Raises
    ------
    derivations.core.cli.UsageError
        ``needed`` exceeds :func:`memory_budget`.
    """
    budget = memory_budget()
    if needed > budget:
        raise UsageError(f"{command} with {seq_len() if seq_len else f'--seq-len {config.seq_len}'}, "
                         f"--batch-size {config.batch_size}, "
                         f"--steps-per-epoch {config.steps_per_epoch}, --eval-batches {config.eval_batches} "
                         f"and {held} would need about {shown_size(needed)} of memory at once, more than half "
                         f"of this machine's ({shown_size(2 * budget)}); choose smaller sizes")
