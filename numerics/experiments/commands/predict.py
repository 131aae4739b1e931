"""``python -m numerics.experiments predict``: the theory beside the sweep (no SGD).

The options and the work are :mod:`numerics.experiments.predict`'s
(:func:`~numerics.experiments.predict.add_arguments` adds ``--json`` and
``--quiet`` itself; :func:`~numerics.experiments.predict.command` checks every
option before any flow and returns ``(work, format)``).
"""
from __future__ import annotations

__all__ = ["add_parser", "prepare"]


def add_parser(sub):
    from .. import predict

    pp = sub.add_parser("predict", help="the theory's prediction: the expected-count flow per seed",
                        description="The expected-count gradient flow of the authors' task (or --task) from "
                                    "each SGD seed's initial matrices, read off where the loss first reaches each "
                                    "target: one record per (parameterization, ratio, seed, target) with "
                                    "the flow time in SGD steps, the loss and the attention on relevant "
                                    "tokens / the query's own token / other positions.")
    predict.add_arguments(pp)


def prepare(args):
    """Check every option (before any flow); return ``(work, format)``."""
    from .. import predict

    return predict.command(args)
