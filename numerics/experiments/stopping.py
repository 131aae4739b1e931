r"""When a run stops: the authors' stop rule, a target loss, and the check of target losses.

Stop rules are checked after every epoch, per run:

* ``"authors"`` (:class:`AuthorsStopRule`): the notebooks' rule.  A running
  sum of per-step losses is reset only at the start of epochs 0, 100, 200, ...
  and training stops when ``running_sum / steps_per_epoch <= 0.001``; in effect
  it fires on the first epoch after a 100-epoch boundary whose mean loss is
  at most 0.001.
* ``"none"``: train all epochs.
* a target loss (:func:`target_reached`, the sweep's): stop when the mean
  training loss of an epoch is at most the target.

Whatever the rule, a run trains at most :data:`MAX_SGD_STEPS` SGD steps (:func:`check_total_steps`).
"""
from __future__ import annotations

import numpy as np

from derivations.core.vocabulary import check_positive

__all__ = ["STOP_RULES", "LOG_EVERY", "AUTHORS_THRESHOLD", "MAX_SGD_STEPS", "AuthorsStopRule", "target_reached",
           "target_losses", "check_total_steps"]

#: The stop rules of a Figure-2 run (:class:`numerics.experiments.sgd.Fig2Config` ``stop``).
STOP_RULES = ("authors", "none")
#: Epochs per entry of the loss log (the notebooks print every 100 epochs).
LOG_EVERY = 100
#: Threshold of the authors' stop rule.
AUTHORS_THRESHOLD = 1e-3
#: Most SGD steps one run trains (a thousand times the longest published run, days of computing):
#: the bound of ``epochs``, ``steps_per_epoch``, ``max_steps`` and the steps they schedule, in
#: Figure 2, the sweep and Figure 3.
MAX_SGD_STEPS = 10 ** 9


class AuthorsStopRule:
    """The notebooks' stop rule, for a vector of runs.

    Call :meth:`update` after every epoch with the epoch index (0-based) and
    each run's sum of per-step losses in that epoch; it returns a boolean
    array: which runs stop now.  The running sum is reset at the start of
    epochs ``0, every, 2 every, ...`` only (the quirk), and a run stops when
    ``running_sum / steps_per_epoch <= threshold``.

    Parameters
    ----------
    n_runs : int
        Number of runs (the length of the loss sums :meth:`update` takes).
    steps_per_epoch : int
        SGD steps per epoch, the divisor of the running sum.
    threshold : float, optional
        A run stops when its running mean loss is at most this (default :data:`AUTHORS_THRESHOLD`).
    every : int, optional
        The running sum is reset every this many epochs (default :data:`LOG_EVERY`).

    >>> rule = AuthorsStopRule(n_runs=1, steps_per_epoch=10, every=2)
    >>> [bool(rule.update(e, np.array([s]))[0]) for e, s in enumerate([5.0, 0.001, 0.001, 0.001])]
    [False, False, True, True]
    """

    def __init__(self, n_runs: int, steps_per_epoch: int, *, threshold: float = AUTHORS_THRESHOLD,
                 every: int = LOG_EVERY):
        self.running = np.zeros(n_runs)
        self.steps_per_epoch = steps_per_epoch
        self.threshold = threshold
        self.every = every

    def update(self, epoch: int, epoch_loss_sums) -> np.ndarray:
        """Add one epoch's loss sums; which runs stop now.

        Parameters
        ----------
        epoch : int
            0-based.
        epoch_loss_sums : array_like, shape (S,)

        Returns
        -------
        ndarray of bool
        """
        if epoch % self.every == 0:
            self.running[:] = 0.0
        self.running += np.asarray(epoch_loss_sums, dtype=float)
        return self.running / self.steps_per_epoch <= self.threshold

    def select(self, keep) -> None:
        """Keep only the runs ``keep`` (boolean mask) after others stopped.

        Parameters
        ----------
        keep : ndarray of bool
        """
        self.running = self.running[keep]


def target_reached(epoch_loss_sums, epoch_steps, target) -> np.ndarray:
    """Which runs' epoch-mean training loss is at most ``target`` (the target-loss rule).

    Parameters
    ----------
    epoch_loss_sums : array_like, shape (S,)
        Each run's sum of per-step losses in the epoch.
    epoch_steps : int or array_like, shape (S,)
        The steps of the epoch.
    target : float

    Returns
    -------
    ndarray of bool, shape (S,)

    >>> target_reached(np.array([2.0, 0.5]), 10, 0.1).tolist()
    [False, True]
    """
    return np.asarray(epoch_loss_sums) / np.asarray(epoch_steps) <= target


def target_losses(target_loss) -> list:
    """One target loss or several as a list, highest first (the order a run reaches them).

    Parameters
    ----------
    target_loss : float or iterable of float
        Distinct, finite and > 0, in any order.

    Returns
    -------
    list of float

    Raises
    ------
    ValueError
        An empty list, a number that is not finite and > 0, or a duplicate.

    >>> target_losses([0.1, 0.5, 0.2]), target_losses(0.1)
    ([0.5, 0.2, 0.1], [0.1])
    """
    values = [target_loss] if isinstance(target_loss, (int, float)) else list(target_loss)
    if not values:
        raise ValueError("target_loss must name at least one loss")
    values = [check_positive("target_loss", v) for v in values]
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise ValueError(f"target_loss names {twice[0]:g} twice")
    return sorted(values, reverse=True)


def check_total_steps(epochs: int, steps_per_epoch: int, max_steps=None) -> int:
    """The SGD steps a run trains, ``epochs * steps_per_epoch`` (capped by ``max_steps``), checked.

    Parameters
    ----------
    epochs, steps_per_epoch : int
    max_steps : int, optional

    Returns
    -------
    int

    Raises
    ------
    ValueError
        More than :data:`MAX_SGD_STEPS` steps; the message names the parameters.
    """
    total = epochs * steps_per_epoch if max_steps is None else min(epochs * steps_per_epoch, max_steps)
    if total > MAX_SGD_STEPS:
        raise ValueError(f"epochs x steps_per_epoch must be at most {MAX_SGD_STEPS} SGD steps; got {epochs} x "
                         f"{steps_per_epoch} = {epochs * steps_per_epoch}")
    return total
