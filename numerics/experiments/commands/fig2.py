"""``python -m numerics.experiments fig2``: one Figure-2 configuration."""
from __future__ import annotations

import contextlib

from derivations.core.cli import parse_int
from derivations.core.output import json_text
from derivations.core.vocabulary import PARAMETERIZATIONS

from .. import task_sampling
from . import common
from .common import number
from .task_options import add_task_arguments, seq_len_for, seq_len_name, task_from_args

__all__ = ["add_parser", "prepare", "format_fig2"]


def add_parser(sub):
    """Add the ``fig2`` subcommand and its options to ``sub``.

    Parameters
    ----------
    sub : argparse.Action
        The subcommands of ``python -m numerics.experiments`` (what
        :meth:`argparse.ArgumentParser.add_subparsers` returned).
    """
    from .. import models, stopping

    f2 = sub.add_parser("fig2", help="one Figure-2 configuration: SGD on sampled sequences, heatmap",
                        description="Train one Figure-2 configuration for its seeds (stacked) and measure the "
                                    "heatmap of relevant-token attention x label probability on fresh batches.")
    f2.add_argument("--parameterization", default="CACO", choices=PARAMETERIZATIONS,
                    help="collapsed (C) or factorized (F) attention, then output circuit (default CACO)")
    f2.add_argument("--lr-qk", default="0.01", metavar="X", help="learning rate of the QK circuit (> 0; default 0.01)")
    f2.add_argument("--lr-ov", default="0.01", metavar="Y", help="learning rate of the OV circuit (> 0; default 0.01)")
    f2.add_argument("--qk-ramp", default="1", metavar="F",
                    help="multiply the QK rate by 1 + (F - 1) step / total_steps (default 1: no ramp)")
    f2.add_argument("--seq-len", default=None, metavar="N",
                    help="sequence length including query and label (integer >= 3; default 64, or the "
                         "--task's own length: its context multiplicities' total + 2)")
    f2.add_argument("--batch-size", default="32", metavar="B", help="sequences per SGD step (default 32)")
    f2.add_argument("--epochs", default=None, metavar="E",
                    help="epochs (default: the published run's, 2500; 5000 for CAFO); epochs x steps per epoch "
                         "at most 1e9 SGD steps")
    f2.add_argument("--steps-per-epoch", default=None, metavar="K",
                    help="SGD steps per epoch (default: the published run's, 250; 200 for CAFO and CACO)")
    f2.add_argument("--stop", default="authors", choices=stopping.STOP_RULES,
                    help="the notebooks' stop rule (mean loss <= 0.001 with the 100-epoch running-sum quirk) "
                         "or none (default authors)")
    f2.add_argument("--init", default="authors", choices=models.INITS,
                    help="the notebooks' initialization of the parameterization, 1e-6 I everywhere, "
                         "or uniform(+-1/sqrt(50)) everywhere (default authors)")
    f2.add_argument("--seeds", default=None, metavar="LIST",
                    help="comma-separated seeds, ranges a-b allowed (default: the published run's: 1234; "
                         "1234-1238 for CAFO, 1234-1236 for CACO)")
    f2.add_argument("--eval-batches", default="200", metavar="N",
                    help="fresh batches for the final measurements (default 200, i.e. 6400 sequences)")
    add_task_arguments(f2)
    common.add_dtype(f2)
    common.add_common(f2)


def _config(args):
    from .. import sgd
    from ..stopping import MAX_SGD_STEPS

    st = task_from_args(args)
    pub = sgd.published_fig2_defaults(args.parameterization)
    return common.checked(
        sgd.Fig2Config, parameterization=args.parameterization,
        lr_qk=number("--lr-qk", args.lr_qk), lr_ov=number("--lr-ov", args.lr_ov),
        qk_ramp=number("--qk-ramp", args.qk_ramp), seq_len=seq_len_for(st, args),
        batch_size=parse_int("--batch-size", args.batch_size, 1),
        epochs=parse_int("--epochs", args.epochs, 1, MAX_SGD_STEPS) if args.epochs is not None else pub["epochs"],
        steps_per_epoch=(parse_int("--steps-per-epoch", args.steps_per_epoch, 1, MAX_SGD_STEPS)
                         if args.steps_per_epoch is not None else pub["steps_per_epoch"]),
        stop=args.stop, init=args.init, eval_batches=parse_int("--eval-batches", args.eval_batches, 1),
        dtype=args.dtype, task=st.key, task_params=st.params, task_source=args), pub


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
        Bad input (one line), before anything is written.
    """
    from .. import jobs as jobs_mod
    from ..memory import check_memory, fig2_bytes, processes

    config, pub = _config(args)
    seeds = common.parse_seeds(args.seeds) if args.seeds is not None else pub["seeds"]
    workers = common.workers(args)
    groups = jobs_mod.split_seeds(seeds, workers if args.scheduler is None else len(seeds))
    stacked = max(map(len, groups))
    at_once = processes(workers, len(groups), args.scheduler)
    check_memory(at_once * fig2_bytes(config, stacked), "fig2", config,
                 f"{stacked} stacked seeds in each of {at_once} process(es)",
                 lambda: seq_len_name(config.sampled_task, args, config.seq_len))
    run = common.run_options(args, workers)
    # fig2.json of these settings at most (a larger one is of other settings, refused either way)
    limit = jobs_mod.OUTPUT_BASE_BYTES + jobs_mod.output_bytes({"experiment": "fig2", "config": config.to_dict(),
                                                                "seeds": seeds})
    directory = None if args.output is None else common.open_directory(
        args, "fig2", lambda d: d.refuse_other_settings({**config.to_dict(), "seeds": seeds}, limit=limit))[0]

    def work():
        with directory or contextlib.nullcontext():
            return _work(config, seeds, groups, run, directory)
    return work, format_fig2


def _work(config, seeds, groups, run, directory):
    """Train the seeds' jobs (``run``: :func:`~numerics.experiments.commands.common.run_options`),
    combine them; write ``fig2.json`` and the figure into ``directory`` (if any)."""
    from .. import jobs as jobs_mod
    from ..runner import run_jobs

    job_list = [{"experiment": "fig2", "config": config.to_dict(), "seeds": g} for g in groups]
    results = run_jobs(jobs_mod.fig2_job, job_list, desc="fig2", epochs=jobs_mod.job_epochs, **run)
    runs = [r for res in results for r in res["runs"]]
    common.warn_diverged(runs, lambda r: f"fig2 seed {r['seed']}", dtype=config.dtype)
    payload = {**jobs_mod.combine_runs(runs), "settings": {**config.to_dict(), "seeds": seeds}, "runs": runs}
    if directory is not None:
        _write(directory, config, payload, len(seeds))
    return payload


def _write(directory, config, payload, n_seeds):
    from .. import plots

    directory.write_text("fig2.json", json_text(payload))
    if payload["heatmap"] is None:
        common.warn("every run diverged: no heatmap figure")
        return
    task = f"task {config.sampled_task.name}, " if task_sampling.task_settings(config.sampled_task) else ""
    title = (f"{task}{config.parameterization}, QK {config.lr_qk:g} / OV {config.lr_ov:g}"
             + (f", ramp x{config.qk_ramp:g}" if config.qk_ramp != 1 else ""))
    plots.save_figure(plots.plot_fig2_heatmaps(
        [dict(title=title, heatmap=payload["heatmap"], heatmap_std=payload["heatmap_std"],
              n_seeds=n_seeds)], ncols=1), directory.path, f"fig2_{config.parameterization}")


def _g(x, spec):
    return "null" if x is None or x != x else format(x, spec)


def format_fig2(payload) -> str:
    """The human-readable summary (``null`` where a number is undefined).

    Parameters
    ----------
    payload : dict
        What ``fig2`` computes (``heatmap``, ``separability``, ``runs``).

    Returns
    -------
    str
    """
    lines = ["heatmap (% of sequences; rows: relevant-token attention 0-.2 ... .8-1; "
             "columns: label probability 0-.2 ... .8-1)"]
    for row in payload["heatmap"] or []:
        lines.append("  " + " ".join(f"{v:6.1f}" for v in row))
    sep = payload["separability"]
    lines.append(f"separability {_g(sep['mean'], '.4g')} +- {_g(sep['std'], '.3g')}")
    for r in payload["runs"]:
        lines.append(f"seed {r['seed']}: steps {r['steps']}, stopped epoch {_g(r['stopped_epoch'], 'd')}, "
                     f"final loss {_g(r['final_loss'], '.4g')}, accuracy {_g(r['accuracy'], '.4f')}, "
                     f"relevant attention {_g(r['relevant_attention'], '.4f')}"
                     + (", diverged" if r.get("status") == "diverged" else ""))
    return "\n".join(lines)
