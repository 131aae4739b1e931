"""``python -m numerics.experiments fig3``: the fixed-attention runs of Figure 3."""
from __future__ import annotations

import contextlib
import math

from derivations.core.cli import parse_int, parse_list
from derivations.core.output import json_text

from . import common
from .common import number

__all__ = ["add_parser", "prepare", "format_fig3"]

ALPHAS = "0.2,0.4,0.6,0.8,1"


def add_parser(sub):
    """Add the ``fig3`` subcommand and its options to ``sub``.

    Parameters
    ----------
    sub : argparse.Action
        The subcommands of ``python -m numerics.experiments`` (what
        :meth:`argparse.ArgumentParser.add_subparsers` returned).
    """
    from ..fixed_attention import OUTPUT_CIRCUITS

    f3 = sub.add_parser("fig3", help="Figure 3: fixed attention, the incentive to sharpen",
                        description="Train the fixed-attention models at each alpha and measure L(alpha), "
                                    "L(alpha + 0.005) and the incentive (L(alpha) - L(alpha + 0.005)) / 0.005.")
    f3.add_argument("--output-circuit", default="collapsed", choices=OUTPUT_CIRCUITS,
                    help="W c + b, or W_O (W_V c + b_V) + b_O (default collapsed)")
    f3.add_argument("--alphas", default=ALPHAS, metavar="LIST",
                    help=f"comma-separated distinct fixed attention on the relevant tokens, each in (0, 1] "
                         f"(default {ALPHAS})")
    f3.add_argument("--epochs", default="500", metavar="E",
                    help="epochs (default 500); epochs x steps per epoch at most 1e9 SGD steps")
    f3.add_argument("--steps-per-epoch", default="250", metavar="K", help="SGD steps per epoch (default 250)")
    f3.add_argument("--batch-size", default="128", metavar="B",
                    help="sequences per step, a multiple of 4 (balanced classes; default 128)")
    f3.add_argument("--seq-len", default="64", metavar="N", help="sequence length (default 64)")
    f3.add_argument("--lr", default="0.01", metavar="X", help="SGD learning rate (default 0.01)")
    f3.add_argument("--eval-batches", default="8", metavar="N",
                    help="fresh batches per measurement (default 8)")
    f3.add_argument("--seed", default="1234", metavar="S", help="seed of every alpha (default 1234)")
    common.add_common(f3)


def prepare(args):
    """Check every input (then the output directory); return the work and its formatter, no work done yet.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    work : callable
        ``work()`` runs the command and returns its payload.
    format : callable
        ``format(payload)``: the human-readable summary.

    Raises
    ------
    derivations.core.cli.UsageError
        Bad input (one line), before anything is written: also an ``--output`` that holds
        another kind of experiment, a fig3 run of other settings, or is in use.
    """
    from .. import jobs as jobs_mod
    from ..runner import run_jobs
    from .. import fixed_attention
    from ..memory import check_memory, fig3_bytes
    from ..stopping import MAX_SGD_STEPS

    alphas = parse_list("--alphas", args.alphas, lambda t: number("--alphas", t), distinct=True)   # (0, 1]: Fig3Config
    config = common.checked(
        fixed_attention.Fig3Config, output_circuit=args.output_circuit, alphas=tuple(alphas),
        epochs=parse_int("--epochs", args.epochs, 1, MAX_SGD_STEPS),
        steps_per_epoch=parse_int("--steps-per-epoch", args.steps_per_epoch, 1, MAX_SGD_STEPS),
        batch_size=parse_int("--batch-size", args.batch_size, 4), seq_len=parse_int("--seq-len", args.seq_len, 3),
        lr=number("--lr", args.lr), eval_batches=parse_int("--eval-batches", args.eval_batches, 1),
        seed=parse_int("--seed", args.seed, 0))
    check_memory(fig3_bytes(config), "fig3", config, f"{len(config.alphas)} alphas")
    run = common.run_options(args, common.workers(args))
    # fig3.json of these settings at most (a larger one is of other settings, refused either way)
    limit = jobs_mod.OUTPUT_BASE_BYTES + jobs_mod.output_bytes({"experiment": "fig3", "config": config.to_dict()})
    directory = None if args.output is None else common.open_directory(
        args, "fig3", lambda d: d.refuse_other_settings(config.to_dict(), limit=limit))[0]

    def work():
        job = {"experiment": "fig3", "config": config.to_dict()}
        with directory or contextlib.nullcontext():
            res = run_jobs(jobs_mod.fig3_job, [job], desc="fig3", epochs=jobs_mod.job_epochs, **run)[0]
            common.warn_diverged(fixed_attention.diverged_alphas(res, config.steps_per_epoch),
                                 lambda r: f"fig3 alpha {r['alpha']:g}", "null from there on")
            payload = {**res, "settings": config.to_dict()}
            if directory is not None:
                from .. import plots

                directory.write_text("fig3.json", json_text(payload))
                plots.save_figure(plots.plot_fig3({config.output_circuit: payload}), directory.path,
                                  f"fig3_{config.output_circuit}")
        return payload
    return work, format_fig3


def format_fig3(p) -> str:
    """The human-readable table of the Figure-3 runs.

    Parameters
    ----------
    p : dict
        What ``fig3`` computes (``alpha``, ``loss``, ``incentive``); a loss that is not finite (a
        diverged alpha) is shown ``null``, the largest incentive is that of the finite ones.

    Returns
    -------
    str
    """
    def shown(x, width, spec):
        return f"{'null':>{width}}" if x is None or not math.isfinite(x) else f"{x:{width}{spec}}"

    lines = ["alpha   L(epoch 0)   L(final)   max incentive   final incentive"]
    for a, L, inc in zip(p["alpha"], p["loss"], p["incentive"]):
        finite = [x for x in inc if x is not None and math.isfinite(x)]
        lines.append(f"{a:5.3g}   {shown(L[0], 10, '.4f')}   {shown(L[-1], 8, '.4f')}   "
                     f"{shown(max(finite, default=None), 13, '.4g')}   {shown(inc[-1], 15, '.4g')}")
    return "\n".join(lines)
