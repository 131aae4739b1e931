"""``python -m numerics.experiments sweep``: the matched-loss sweep over ``eta_QK / eta_OV``."""
from __future__ import annotations

import os

from derivations.core.cli import UsageError, parse_int, parse_list
from derivations.core.output import json_text
from derivations.core.vocabulary import PARAMETERIZATIONS

from .. import task_sampling
from ..stopping import MAX_SGD_STEPS, target_losses
from . import common
from .common import number
from .task_options import add_task_arguments, seq_len_for, seq_len_name, task_from_args

__all__ = ["add_parser", "prepare", "format_sweep"]


def add_parser(sub):
    """Add the ``sweep`` subcommand and its options to ``sub``.

    Parameters
    ----------
    sub : argparse.Action
        The subcommands of ``python -m numerics.experiments`` (what
        :meth:`argparse.ArgumentParser.add_subparsers` returned).
    """
    from .. import models

    sw = sub.add_parser("sweep", help="matched-loss sweep over eta_QK / eta_OV",
                        description="Train every (parameterization, ratio, seed) until the mean training loss of "
                                    "an epoch reaches the target (the lowest, if several), and measure where the "
                                    "attention goes (relevant tokens, the query's own token, other positions) at "
                                    "each target.")
    sw.add_argument("--parameterizations", required=True, metavar="LIST",
                    help="comma-separated subset of " + ",".join(PARAMETERIZATIONS))
    sw.add_argument("--ratios", required=True, metavar="LIST",
                    help="comma-separated distinct eta_QK / eta_OV, each > 0")
    sw.add_argument("--seeds", required=True, metavar="K", help="number of seeds per configuration (1234, 1235, ...)")
    sw.add_argument("--target-loss", required=True, metavar="L[,L...]",
                    help="stop when an epoch's mean loss <= L (> 0 and below every run's initial loss, "
                         "about 3.91); several distinct losses (any order): each run trains to the lowest "
                         "and is measured where it first reaches each one (one row per run and target)")
    sw.add_argument("--max-steps", default="200000", metavar="N", help="step cap per run (at most 1e9; default 200000)")
    sw.add_argument("--lr-ov", default="0.01", metavar="Y", help="OV learning rate (default 0.01)")
    sw.add_argument("--seq-len", default=None, metavar="N",
                    help="sequence length: context, query and label (default 64, or the --task's own length)")
    sw.add_argument("--batch-size", default="32", metavar="B", help="sequences per step (default 32)")
    sw.add_argument("--steps-per-epoch", default="100", metavar="K",
                    help="steps between checks of the target (default 100)")
    sw.add_argument("--init", default="authors", choices=models.INITS,
                    help="initialization (default authors)")
    sw.add_argument("--eval-batches", default="50", metavar="N",
                    help="fresh batches for the measurements (default 50)")
    sw.add_argument("--no-theory", action="store_true",
                    help="do not set the theory beside the runs (the expected-count gradient flow of the "
                         "authors' task, or the --task trained, from each seed's own initial matrices, read at "
                         "the loss each run measured; numerics.experiments.overlay) in the plot and sweep.json, "
                         "nor report where the two agree")
    sw.add_argument("--resume", action="store_true",
                    help="continue the sweep saved in --output (finished runs are not recomputed); refused "
                         "if the settings differ from the stored sweep's, or if --output holds no sweep")
    sw.add_argument("--extend", action="store_true",
                    help="with --resume: add parameterizations, ratios or seeds to the stored sweep; every "
                         "stored row is kept (give the stored ones too), the other settings must be the same")
    add_task_arguments(sw)
    common.add_dtype(sw)
    common.add_common(sw, output_required=True)


def _targets(text):
    """``--target-loss``: one number, or several distinct ones (a list, highest first)."""
    values = parse_list("--target-loss", text, lambda t: number("--target-loss", t))
    values = common.checked(target_losses, values)
    return values[0] if len(values) == 1 else values


def _settings(args) -> dict:
    """The sweep's settings from the command line (validated numbers, no item twice; the task
    as :func:`~numerics.experiments.task_sampling.task_settings` names it)."""
    st = task_from_args(args)
    task = task_sampling.task_settings(st)
    return {"parameterizations": common.parse_parameterizations(args.parameterizations),
            "ratios": parse_list("--ratios", args.ratios, lambda t: number("--ratios", t), distinct=True),
            "seeds": parse_int("--seeds", args.seeds, 1, common.MAX_SEEDS), "target_loss": _targets(args.target_loss),
            "lr_ov": number("--lr-ov", args.lr_ov), "seq_len": seq_len_for(st, args),
            "batch_size": parse_int("--batch-size", args.batch_size, 1),
            "steps_per_epoch": parse_int("--steps-per-epoch", args.steps_per_epoch, 1, MAX_SGD_STEPS),
            "max_steps": parse_int("--max-steps", args.max_steps, 1, MAX_SGD_STEPS), "init": args.init,
            "eval_batches": parse_int("--eval-batches", args.eval_batches, 1), **task,
            # float64, the default, is not named (nor in the jobs: a float64 job's key does not say it)
            **({"dtype": args.dtype} if args.dtype != "float64" else {})}


def _jobs(s, args=None) -> list:
    from .. import sweep as sweep_mod

    options = {k: s[k] for k in ("max_steps", "lr_ov", "seq_len", "batch_size", "steps_per_epoch", "init",
                                 "eval_batches", "task", "task_params") if k in s}
    options["dtype"] = s.get("dtype", "float64")
    return common.checked(sweep_mod.sweep_jobs, s["parameterizations"], s["ratios"], s["seeds"], s["target_loss"],
                          seed_blocks=s.get("seed_blocks"), task_source=args, **options)


def _check_memory(s, workers, address, args) -> None:
    """Refuse sizes whose arrays would not fit, before a job (or a list of seeds) is built."""
    from .. import sgd
    from .. import sweep as sweep_mod
    from ..memory import check_memory, fig2_bytes, processes

    one = common.checked(sgd.Fig2Config, parameterization=s["parameterizations"][0], lr_qk=s["lr_ov"],
                        lr_ov=s["lr_ov"], seq_len=s["seq_len"], batch_size=s["batch_size"],
                        steps_per_epoch=s["steps_per_epoch"], epochs=1, eval_batches=s["eval_batches"],
                        max_steps=s["max_steps"], **{k: s[k] for k in ("task", "task_params") if k in s},
                        task_source=args)
    # one job per parameterization and block of seeds stacks the block's runs at every ratio
    blocks = sweep_mod.job_seed_blocks(len(s["parameterizations"]), s["seeds"])
    seeds = len(blocks[0])
    at_once = processes(workers, len(s["parameterizations"]) * len(blocks), address)
    runs = len(s["ratios"]) * seeds
    check_memory(at_once * fig2_bytes(one, runs), "sweep", one,
                 f"{runs} stacked runs ({len(s['ratios'])} ratios x {seeds} seeds) in each of "
                 f"{at_once} process(es)", lambda: seq_len_name(one.sampled_task, args, s["seq_len"]))


#: Random starts above which the target check may show a progress bar (if it takes over a second).
_BAR_STARTS = 1000


def _check_target(s, show=True) -> None:
    """Refuse a target the runs "reach" before learning anything: not below the initial loss of one
    of them (the first found: a target above every start is refused at the first run; a progress bar on
    a terminal, unless not ``show``, where many starts take over a second)."""
    from derivations.core.output import progress_bar

    from .. import theory
    from ..models import draws
    from ..sweep import FIRST_SEED

    st = task_sampling.sampled_task(s.get("task", task_sampling.DEFAULT_TASK), s.get("task_params", ()))
    runs = len(s["parameterizations"]) * s["seeds"]
    drawn = sum(draws(p, s["init"]) for p in s["parameterizations"]) * s["seeds"]
    highest = target_losses(s["target_loss"])[0]
    with progress_bar(runs if drawn > _BAR_STARTS else 0, desc="initial losses", unit="run", show=show,
                      delay=1.0) as bar:
        (p, seed), lowest = theory.lowest_initial_loss(st, s["parameterizations"], s["init"],
                                                       range(FIRST_SEED, FIRST_SEED + s["seeds"]),
                                                       seq_len=s["seq_len"], progress=bar.update, stop_at=highest)
    if highest >= lowest:
        from numerics.validation import shown_number
        raise UsageError(f"--target-loss {shown_number(highest)} is not below the initial loss "
                         f"{shown_number(lowest)} (of {p} seed {seed}, one of the sweep's runs): it would "
                         f"be reached before anything is learned")


def _check_resume(args, directory=None) -> None:
    """Refuse ``--resume`` where ``--output`` holds no sweep to continue: a path that does not exist
    (without ``directory``: refused before it is created) or a directory without a sweep's settings."""
    if not (args.resume and args.output.strip()):
        return
    if not os.path.lexists(args.output) if directory is None else directory.settings() is None:
        raise UsageError(f"--resume: {args.output!r} holds no sweep to continue")


def _continue(directory, args, settings):
    """Check ``--resume`` against the sweep's directory (its stored settings and runs), record the
    settings (:class:`~numerics.experiments.directory.ExperimentDirectory`).

    Returns ``(settings to run, jobs)``."""
    from ..settings import continued_settings, settings_difference

    stored = directory.settings()
    if stored is not None and not args.resume:
        raise UsageError(f"--output {str(directory.path)!r} already holds a sweep; pass --resume to continue "
                         "it or choose another directory")
    if stored is not None:
        difference = settings_difference(stored, settings, extend=args.extend, named=_named(args, settings))
        if difference is not None:
            raise UsageError(f"--resume: {difference}")
        settings = continued_settings(stored, settings)
    else:
        settings = {**settings, "seed_blocks": [settings["seeds"]]}
    jobs = _jobs(settings, args)
    if stored is not None:
        _check_stored_runs(directory, jobs, extend=args.extend)
    directory.write_settings(settings)
    return settings, jobs


def _named(args, settings) -> dict:
    """How a ``--resume`` refusal names the command line's values that the user may not have typed
    (:func:`~numerics.experiments.settings.settings_difference`): a task's own sequence length, a task's
    parameters and where each comes from (``--params n``, ``defaults.n``)."""
    from .task_options import param_values, set_by

    named = {"task_params": lambda values: set_by(args.task, values, param_values(args))}
    if args.seq_len is None:
        named["seq_len"] = lambda _: seq_len_name(task_from_args(args), args, settings["seq_len"])
    return named


#: The keys of a sweep job (:func:`numerics.experiments.sweep.sweep_jobs`); a stored job with another is of
#: another layout.
_JOB_KEYS = ("experiment", "config", "seeds", "ratios", "target_losses")
#: The settings a sweep job's config records, named first where a stored run differs (``lr_qk``, ``epochs``
#: follow from them).
_NAMED_FIRST = ("lr_ov", "seq_len", "batch_size", "steps_per_epoch", "max_steps", "init", "eval_batches",
                "target_loss", "task", "task_params", "dtype")


def _check_stored_runs(directory, jobs, *, extend) -> None:
    """Refuse stored runs of another job layout, stored runs that are not runs of the settings in
    ``sweep-settings.json`` (runs of another sweep put there, or settings written again with their
    digest), and, without ``--extend``, stored runs of which none is a job of this sweep (jobs cut by
    an earlier layout)."""
    from ..directory import SETTINGS_FILE
    from ..store import job_key

    stored = list(directory.stored_jobs())
    found = next((d for d in (_stored_difference(job, jobs) for job in stored) if d is not None), None)
    where = f"--output {str(directory.path)!r} holds"
    if found is not None and found != "layout":
        raise UsageError(f"{where} stored runs that are not runs of the settings in {SETTINGS_FILE} (a stored "
                         f"run has {found[0]}, the settings {found[1]}); they are neither "
                         f"continued nor replaced: choose another directory")
    if found == "layout" or (stored and not extend
                             and not {job_key(job) for job in jobs} & {job_key(job) for job in stored}):
        raise UsageError(f"{where} {len(stored)} stored run(s) of another job layout (an earlier qkov), which "
                         f"is not read; choose another directory")


def _stored_difference(job, jobs):
    """None where a stored job is a run of the sweep of ``jobs`` (its job, or its job before an
    ``--extend``: the same config and targets, its ratios and seeds among the sweep's); ``"layout"``
    for a job of another shape; else the first difference, ``(stored, the sweep's)`` as options."""
    from dataclasses import fields

    from ..settings import comparable, shown, shown_option
    from ..sgd import Fig2Config

    config = job.get("config")
    if (job.get("experiment") != "sweep" or set(job) - set(_JOB_KEYS) or not isinstance(config, dict)
            or set(config) - {f.name for f in fields(Fig2Config)} or not isinstance(job.get("ratios"), list)
            or not isinstance(job.get("seeds"), list)):
        return "layout"
    same = [j for j in jobs if j["config"]["parameterization"] == config.get("parameterization")]
    if not same:
        ours = list(dict.fromkeys(j["config"]["parameterization"] for j in jobs))
        return (shown_option("parameterizations", [config.get("parameterization")]),
                shown_option("parameterizations", ours))
    ours = same[0]
    targets = [job.get("target_losses") or config.get("target_loss"),
               ours.get("target_losses") or ours["config"]["target_loss"]]
    keys = sorted(dict.fromkeys([*ours["config"], *config]), key=lambda k: k not in _NAMED_FIRST)
    for key, a, b in [("target_loss", *targets), *((k, config.get(k), ours["config"].get(k)) for k in keys)]:
        if comparable(a) != comparable(b):
            return shown_option(key, a), shown_option(key, b)
    if not set(map(comparable, job["ratios"])) <= set(map(comparable, ours["ratios"])):
        return shown_option("ratios", job["ratios"]), shown_option("ratios", ours["ratios"])
    seeds = [s for j in same for s in j["seeds"]]
    if not set(map(comparable, job["seeds"])) <= set(map(comparable, seeds)):
        return f"seeds {shown(job['seeds'])}", shown_option("seeds", len(seeds))
    return None


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
    if args.extend and not args.resume:
        raise UsageError("--extend extends a stored sweep: give it with --resume")
    settings = _settings(args)
    workers = common.workers(args)
    _check_memory(settings, workers, args.scheduler, args)
    _jobs(settings, args)
    _check_target(settings, show=not args.quiet)
    run = common.run_options(args, workers)
    _check_resume(args)
    directory, (settings, jobs) = common.open_directory(
        args, "sweep", lambda d: _check_resume(args, d) or _continue(d, args, settings))

    def work():
        with directory:
            return _run(args, directory, jobs, settings, run)
    return work, format_sweep


def _run(args, directory, jobs, settings, run):
    from .. import jobs as jobs_mod
    from .. import sweep as sweep_mod
    from ..runner import run_jobs

    output = directory.path
    store = directory.store(validate=jobs_mod.valid_result)
    results = run_jobs(jobs_mod.sweep_job, jobs, store=store, desc="sweep", epochs=jobs_mod.job_epochs, **run)
    rows = sweep_mod.rows_from_results(results)
    rows.sort(key=lambda r: (settings["parameterizations"].index(r["parameterization"]),
                             settings["ratios"].index(r["ratio"]), r["seed"], -r["target_loss"]))
    lowest = target_losses(settings["target_loss"])[-1]
    common.warn_diverged(_at(rows, lowest), lambda r: f"sweep run {r['parameterization']} ratio {r['ratio']:g} seed "
                         f"{r['seed']}", "empty", dtype=settings.get("dtype", "float64"))
    sweep_mod.write_csv(rows, output / "results.csv")
    summary = sweep_mod.summarize(rows)
    shown = {k: v for k, v in settings.items() if k != "seed_blocks"}
    payload = {"summary": summary, "spearman": sweep_mod.spearman(_at(rows, lowest)),
               "settings": shown}
    if isinstance(settings["target_loss"], list):
        payload["spearman_by_target"] = {f"{t:g}": sweep_mod.spearman(_at(rows, t))
                                         for t in settings["target_loss"]}
    theory = None if args.no_theory else _theory(rows, settings, run)
    if theory is not None:
        from ..overlay import agreement

        payload["prediction"] = theory
        payload["agreement"] = agreement(rows, theory)
    directory.write_text("sweep.json", json_text(payload))
    _figure(output, summary, rows, theory, settings)
    return payload


def _at(rows, target):
    """The rows of one target loss."""
    return [r for r in rows if r["target_loss"] == target]


def _theory(rows, settings, run_options):
    """The theory beside every run (:func:`numerics.experiments.overlay.theory_beside_runs`), or None;
    its flows run on the sweep's workers, one job per (parameterization, ratio), or here if those
    fail (a lost Dask scheduler, a broken pool): the measured sweep is written either way."""
    from ..overlay import theory_beside_runs
    from ..cluster import SchedulerLost
    from ..pool import WorkerLost
    from ..runner import JobError, run_jobs

    def run(func, jobs):
        try:
            return run_jobs(func, jobs, desc="theory", **run_options)
        except (JobError, SchedulerLost, WorkerLost, ValueError, OSError) as exc:
            common.warn(f"the theory overlay is computed in this process ({exc})")
            return [func(job) for job in jobs]
    records = theory_beside_runs(rows, settings, warn=lambda m: common.warn(f"no theory overlay: {m}"), run=run)
    return records or None


def _figure(output, summary, rows, theory, settings):
    """``sweep.png/pdf``: the three shares against the ratio, one row of panels per target;
    ``proxies.png/pdf``: the interpretability proxies and predictive performance
    (:func:`numerics.experiments.proxy_plots.plot_proxies`)."""
    from .. import plots
    from ..proxy_plots import plot_proxies
    from ..overlay import plotted_theory

    targets = target_losses(settings["target_loss"])
    title = ("SGD: each run measured where its epoch-mean training loss first reached the target "
             f"({', '.join(f'{t:g}' for t in targets)}); points: seeds, solid line: their mean")
    if theory is not None:
        title += ("\ntheory: the expected-count flow from each seed's own initial matrices, read at the "
                  "loss that run measured;\nthin dashed: seeds, thick dashed: their mean")
    plotted = None if theory is None else plotted_theory(theory)
    plots.save_figure(plots.plot_sweep(summary, rows=rows, theory=plotted, title=title), output, "sweep")
    plots.save_figure(plot_proxies(rows, plotted), output, "proxies")


def _f(x, spec):
    return "null" if x is None else format(x, spec)


def format_sweep(p) -> str:
    """The human-readable table of the sweep (and, with the theory, where it agrees with SGD).

    Parameters
    ----------
    p : dict
        ``sweep.json``'s payload (``summary``, ``spearman``, optionally ``agreement``); the
        t-interval of the relevant share is shown clipped to [0, 1] (the share's range, as the figure
        clips it), Spearman's rho and p to 4 significant digits, an undefined number as ``null``.

    Returns
    -------
    str
    """
    lines = ["param  ratio   target  reached   relevant (95% CI)           self    other   label prob   "
             "loss      steps"]
    for s in p["summary"]:
        lo, hi = s["relevant_attention_ci95"]
        ci = "" if lo is None else f"[{max(lo, 0.0):.3f}, {min(hi, 1.0):.3f}]"     # a share lies in [0, 1]
        lines.append(f"{s['parameterization']}  {s['ratio']:6.3g}  {_f(s.get('target_loss'), '<6g')}  "
                     f"{s['reached']}/{s['n']}       "
                     f"{_f(s['relevant_attention_mean'], '.4f')} {ci:18s}  {_f(s.get('self_attention_mean'), '.4f')}"
                     f"  {_f(s.get('other_attention_mean'), '.4f')}  {_f(s['label_probability_mean'], '.4f')}"
                     f"       {_f(s['loss_mean'], '.4f')}    {_f(s['steps_mean'], '.0f')}")
    for name, sp in p["spearman"].items():
        lines.append(f"Spearman(ratio, attention) {name}: rho = {_f(sp['rho'], '.4g')}, p = {_f(sp['pvalue'], '.4g')}")
    if p.get("agreement"):
        from ..overlay import format_agreement

        lines.append(format_agreement(p["agreement"]))
    return "\n".join(lines)
