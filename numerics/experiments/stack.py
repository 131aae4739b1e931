r"""Train runs of equal shape but their own learning rates in one stack (the sweep's jobs).

:func:`numerics.experiments.sgd.train_fig2` stacks the seeds of one
configuration.  :func:`train_stack` stacks any runs that share everything but
their rates: ``lr_qk``, ``lr_ov`` and ``qk_ramp`` become per-run arrays (every
operation on them is the IEEE operation a run alone does on its own float), and
each run keeps its own :func:`numpy.random.default_rng` ``(seed)`` stream, so
one seed may appear with several rates.  A run that stops (its stop rule fires,
or it diverges) leaves the stack, which is compacted: finished runs cost
nothing.  Every run's numbers (losses, steps, marks, final parameters) are
bitwise those of the run trained alone with ``train_fig2``
(``tests/numerics/experiments/test_experiments_stack.py`` checks it for every parameterization).

>>> from dataclasses import replace
>>> from numerics.experiments.sgd import Fig2Config
>>> c = Fig2Config(parameterization="CACO", epochs=2, steps_per_epoch=5, stop="none")
>>> runs = train_stack([c, replace(c, lr_qk=0.05)], [1234, 1234])
>>> [r["steps"] for r in runs], runs[0]["epoch_loss"] != runs[1]["epoch_loss"]
([10, 10], True)
"""
from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np

from . import sgd

__all__ = ["RATE_FIELDS", "train_stack"]

#: The settings in which the runs of a stack may differ (each run's own number).
RATE_FIELDS = ("lr_qk", "lr_ov", "qk_ramp")


def _check_runs(configs, seeds):
    configs, seeds = list(configs), list(seeds)
    if not configs or len(configs) != len(seeds):
        raise ValueError(f"configs and seeds must be non-empty lists of equal length, got {len(configs)} "
                         f"configs and {len(seeds)} seeds")
    for c in configs:
        if not isinstance(c, sgd.Fig2Config):
            raise ValueError(f"configs must be Fig2Config, got {type(c).__name__}")
    seeds = sgd.check_seeds(seeds, distinct=False)
    shared = dict.fromkeys(RATE_FIELDS, 0.01)
    base = replace(configs[0], **shared)
    for c in configs[1:]:
        if replace(c, **shared) != base:
            diff = next(k for k, v in asdict(c).items() if k not in RATE_FIELDS and v != getattr(base, k))
            raise ValueError(f"the runs of a stack may differ only in {', '.join(RATE_FIELDS)}; "
                             f"they differ in {diff}")
    pairs = [(tuple(getattr(c, k) for k in RATE_FIELDS), int(s)) for c, s in zip(configs, seeds)]
    if len(set(pairs)) != len(pairs):
        raise ValueError("a run (rates and seed) appears twice in the stack")
    return configs, seeds


def train_stack(configs, seeds, *, progress=None, record_losses=()) -> list:
    """Train run ``i`` with ``configs[i]`` and seed ``seeds[i]``, all in one stack.

    The configs must be equal but for :data:`RATE_FIELDS`; a seed may repeat
    with other rates (not a run twice).  ``progress`` and ``record_losses`` as
    in :func:`numerics.experiments.sgd.train_fig2`; returns one dict per run,
    in order, each exactly ``train_fig2(configs[i], [seeds[i]], ...)[0]``.

    Parameters
    ----------
    configs : list of numerics.experiments.sgd.Fig2Config
    seeds : list of int
    progress : callable, optional
    record_losses : sequence of float

    Returns
    -------
    list of dict

    Raises
    ------
    ValueError
        Configs that differ in more than their rates, a bad seed, or a run twice.
    """
    configs, seeds = _check_runs(configs, seeds)
    rates = tuple(np.array([float(getattr(c, k)) for c in configs]).reshape(-1, 1, 1) for k in RATE_FIELDS)
    return sgd._train(configs[0], seeds, rates, progress, record_losses)
