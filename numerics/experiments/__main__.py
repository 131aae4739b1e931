r"""Command line of the experiments: ``python -m numerics.experiments {fig2,fig3,sweep,reproduce}``.

``fig2``
    One Figure-2 configuration (defaults: the published equal-rate run of the
    chosen parameterization, with its schedule and seeds); prints the heatmap
    or, with ``--json``, one object with ``heatmap``, ``heatmap_std``,
    ``separability``, ``settings`` and ``runs``.
``fig3``
    The fixed-attention runs of Figure 3 (``--json``: ``alpha``, ``loss``,
    ``incentive``, ``final_loss``).
``sweep``
    The matched-loss sweep over ``eta_QK / eta_OV``: ``OUTPUT/results.csv``,
    ``sweep.png/pdf``, ``sweep.json``; ``--resume`` continues a killed sweep.
``reproduce``
    Every published Figure-2/3 run; ``OUTPUT/report.md``, ``report.json``
    and figures.

Bad input prints one line to stderr and exits with status 2, before any work.

>>> import subprocess, sys
>>> r = subprocess.run([sys.executable, "-m", "numerics.experiments", "fig2", "--lr-qk", "-1"],
...                    capture_output=True, text=True)
>>> r.returncode, r.stderr.count("\n")
(2, 1)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from derivations.atomic_file import atomic_write_text
from derivations.vocabulary import PARAMETERIZATIONS


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise UsageError(f"{self.prog}: {message}")




def _common(p, *, output_required=False):
    p.add_argument("--workers", default=None,
                   help="local worker processes (integer >= 1; default: the CPU count); "
                        "1 runs in this process")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address tcp://host:port of a running Dask distributed scheduler to send the runs to "
                        "(needs the optional extra qkov[distributed])")
    p.add_argument("--output", default=None, required=output_required, metavar="DIR",
                   help="directory for results and figures (created if missing)"
                   + ("" if output_required else "; default: print only"))
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no human-readable summary")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``python -m numerics.experiments`` (rendered in the docs)."""
    parser = _Parser(prog="python -m numerics.experiments",
                     description="Rerun the paper's synthetic experiments (Figure 2, Figure 3) and a matched-loss "
                                 "sweep over learning-rate ratios, in NumPy.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{fig2,fig3,sweep,reproduce}",
                                parser_class=_Parser)

    f2 = sub.add_parser("fig2", help="one Figure-2 configuration: SGD on sampled sequences, heatmap",
                        description="Train one Figure-2 configuration for its seeds (stacked) and measure the "
                                    "heatmap of relevant-token attention x label probability on fresh batches.")
    f2.add_argument("--parameterization", default="CACO", choices=PARAMETERIZATIONS,
                    help="collapsed (C) or factorized (F) attention, then output circuit (default CACO)")
    f2.add_argument("--lr-qk", default="0.01", metavar="X", help="learning rate of the QK circuit (> 0; default 0.01)")
    f2.add_argument("--lr-ov", default="0.01", metavar="Y", help="learning rate of the OV circuit (> 0; default 0.01)")
    f2.add_argument("--qk-ramp", default="1", metavar="F",
                    help="multiply the QK rate by 1 + (F - 1) step / total_steps (default 1: no ramp)")
    f2.add_argument("--seq-len", default="64", metavar="N",
                    help="sequence length including query and label (integer >= 3; default 64)")
    f2.add_argument("--batch-size", default="32", metavar="B", help="sequences per SGD step (default 32)")
    f2.add_argument("--epochs", default=None, metavar="E",
                    help="epochs (default: the published run's, 2500; 5000 for CAFO)")
    f2.add_argument("--steps-per-epoch", default=None, metavar="K",
                    help="SGD steps per epoch (default: the published run's, 250; 200 for CAFO and CACO)")
    f2.add_argument("--stop", default="authors", choices=("authors", "none"),
                    help="the notebooks' stop rule (mean loss <= 0.001 with the 100-epoch running-sum quirk) "
                         "or none (default authors)")
    f2.add_argument("--init", default="authors", choices=("authors", "identity", "uniform"),
                    help="the notebooks' initialization of the parameterization, 1e-6 I everywhere, "
                         "or uniform(+-1/sqrt(50)) everywhere (default authors)")
    f2.add_argument("--seeds", default=None, metavar="LIST",
                    help="comma-separated seeds, ranges a-b allowed (default: the published run's: 1234; "
                         "1234-1238 for CAFO, 1234-1236 for CACO)")
    f2.add_argument("--eval-batches", default="200", metavar="N",
                    help="fresh batches for the final measurements (default 200, i.e. 6400 sequences)")
    _common(f2)

    f3 = sub.add_parser("fig3", help="Figure 3: fixed attention, the incentive to sharpen",
                        description="Train the fixed-attention models at each alpha and measure L(alpha), "
                                    "L(alpha + 0.005) and the incentive (L(alpha) - L(alpha + 0.005)) / 0.005.")
    f3.add_argument("--output-circuit", default="collapsed", choices=("collapsed", "factorized"),
                    help="W c + b, or W_O (W_V c + b_V) + b_O (default collapsed)")
    f3.add_argument("--alphas", default="0.2,0.4,0.6,0.8,1", metavar="LIST",
                    help="comma-separated fixed attention on the relevant tokens, each in (0, 1]")
    f3.add_argument("--epochs", default="500", metavar="E", help="epochs (default 500)")
    f3.add_argument("--steps-per-epoch", default="250", metavar="K", help="SGD steps per epoch (default 250)")
    f3.add_argument("--batch-size", default="128", metavar="B",
                    help="sequences per step, a multiple of 4 (balanced classes; default 128)")
    f3.add_argument("--seq-len", default="64", metavar="N", help="sequence length (default 64)")
    f3.add_argument("--lr", default="0.01", metavar="X", help="SGD learning rate (default 0.01)")
    f3.add_argument("--eval-batches", default="8", metavar="N",
                    help="fresh batches per measurement (default 8)")
    f3.add_argument("--seed", default="1234", metavar="S", help="seed of every alpha (default 1234)")
    _common(f3)

    sw = sub.add_parser("sweep", help="matched-loss sweep over eta_QK / eta_OV",
                        description="Train every (parameterization, ratio, seed) until the mean training loss of "
                                    "an epoch reaches the target, then measure relevant-token attention.")
    sw.add_argument("--parameterizations", required=True, metavar="LIST",
                    help="comma-separated subset of CACO,CAFO,FACO,FAFO")
    sw.add_argument("--ratios", required=True, metavar="LIST", help="comma-separated eta_QK / eta_OV, each > 0")
    sw.add_argument("--seeds", required=True, metavar="K", help="number of seeds per configuration (1234, 1235, ...)")
    sw.add_argument("--target-loss", required=True, metavar="L", help="stop when an epoch's mean loss <= L (> 0)")
    sw.add_argument("--max-steps", default="200000", metavar="N", help="step cap per run (default 200000)")
    sw.add_argument("--lr-ov", default="0.01", metavar="Y", help="OV learning rate (default 0.01)")
    sw.add_argument("--seq-len", default="64", metavar="N", help="sequence length (default 64)")
    sw.add_argument("--batch-size", default="32", metavar="B", help="sequences per step (default 32)")
    sw.add_argument("--steps-per-epoch", default="100", metavar="K",
                    help="steps between checks of the target (default 100)")
    sw.add_argument("--init", default="authors", choices=("authors", "identity", "uniform"),
                    help="initialization (default authors)")
    sw.add_argument("--eval-batches", default="50", metavar="N",
                    help="fresh batches for the measurements (default 50)")
    sw.add_argument("--no-theory", action="store_true",
                    help="do not overlay the theory's prediction (the expected-count gradient flow of the "
                         "authors' task, numerics.authors_task, from the same initialization) on the plot "
                         "and in the JSON")
    sw.add_argument("--resume", action="store_true",
                    help="continue the sweep saved in --output (finished runs are not recomputed)")
    _common(sw, output_required=True)

    rp = sub.add_parser("reproduce", help="every published Figure-2 and Figure-3 run, report and figures",
                        description="Run every published Figure-2/3 run; write report.md, report.json and "
                                    "the figures to --output (resumable: finished runs are kept in OUTPUT/runs).")
    rp.add_argument("--quick", action="store_true",
                    help="shortened schedules for a smoke test (not the published numbers)")
    rp.add_argument("--shortest-first", action="store_true",
                    help="start the shortest runs first (more runs finished early if interrupted); "
                         "default: longest first, which finishes soonest on several workers")
    rp.add_argument("--collect", action="store_true",
                    help="no training: write the report and figures from the runs already finished in "
                         "OUTPUT/runs (the report names the missing ones)")
    _common(rp, output_required=True)
    return parser


# --------------------------------------------------------------------------- #
# parsing helpers (UsageError: one line)
# --------------------------------------------------------------------------- #
def _float(name, text, *, positive=True):
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number; got {text!r}") from None
    if not math.isfinite(v):
        raise UsageError(f"{name} must be finite; got {text!r}")
    if positive and v <= 0:
        raise UsageError(f"{name} must be > 0; got {text!r}")
    return v


def _int(name, text, minimum):
    try:
        v = int(str(text).strip())
    except ValueError:
        raise UsageError(f"{name} must be an integer >= {minimum}; got {text!r}") from None
    if v < minimum:
        raise UsageError(f"{name} must be an integer >= {minimum}; got {text!r}")
    return v


def parse_seeds(text) -> list:
    """``"1234,1236-1238"`` -> ``[1234, 1236, 1237, 1238]`` (integers >= 0, distinct)."""
    seeds = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                a, b = part.split("-", 1)
                a, b = int(a), int(b)
                if b < a:
                    raise ValueError
                seeds.extend(range(a, b + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise UsageError(f"--seeds must be comma-separated integers >= 0 (ranges a-b allowed); "
                             f"got {text!r}") from None
    if any(s < 0 for s in seeds):
        raise UsageError(f"--seeds must be integers >= 0; got {text!r}")
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds must be distinct; got {text!r}")
    return seeds


def _list(name, text, conv):
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise UsageError(f"{name} must be a non-empty comma-separated list; got {text!r}")
    return [conv(t) for t in items]


def _output_dir(text):
    if text is None:
        return None
    path = Path(text)
    for p in (path, *path.parents):
        if p.exists() and not p.is_dir():
            raise UsageError(f"--output {text!r}: {str(p)!r} is a file, not a directory")
    return path


def _workers(args):
    if args.workers is None:
        return os.cpu_count() or 1
    return _int("--workers", args.workers, 1)


def _scheduler(args):
    if args.scheduler is None:
        return None
    from .runner import check_scheduler

    try:
        check_scheduler(args.scheduler, timeout=10)
    except ValueError as exc:
        raise UsageError(f"--scheduler: {exc}") from None
    return args.scheduler


def _config_error(exc):
    return UsageError(str(exc))


# --------------------------------------------------------------------------- #
# commands
# --------------------------------------------------------------------------- #
def _json_out(obj):
    return json.dumps(obj, indent=1, allow_nan=False)


def _progress(args):
    """Progress bars (stderr, only on a terminal) unless --quiet."""
    return not args.quiet


def _bar(total, desc, show):
    if not show or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, unit="epoch")


def _run_single_or_pool(func, jobs, args, workers, scheduler, desc, epochs_each, store=None):
    """Run jobs; in-process with an epoch-level bar when only one process would be used."""
    from .runner import run_jobs

    show = _progress(args)
    if scheduler is None and store is None and (workers == 1 or len(jobs) == 1):
        bar = _bar(epochs_each * len(jobs), desc, show)
        try:
            out = []
            for job in jobs:
                res = func(job, progress=bar.update if bar is not None else None)
                out.append(json.loads(json.dumps(res)))
            return out
        finally:
            if bar is not None:
                bar.close()
    return run_jobs(func, jobs, workers=workers, scheduler=scheduler, store=store, progress=show, desc=desc)


def cmd_fig2(args):
    from . import jobs as jobs_mod
    from . import measure, sgd

    pub = sgd.published_fig2_defaults(args.parameterization)
    try:
        config = sgd.Fig2Config(
            parameterization=args.parameterization,
            lr_qk=_float("--lr-qk", args.lr_qk), lr_ov=_float("--lr-ov", args.lr_ov),
            qk_ramp=_float("--qk-ramp", args.qk_ramp), seq_len=_int("--seq-len", args.seq_len, 3),
            batch_size=_int("--batch-size", args.batch_size, 1),
            epochs=_int("--epochs", args.epochs, 1) if args.epochs is not None else pub["epochs"],
            steps_per_epoch=(_int("--steps-per-epoch", args.steps_per_epoch, 1)
                             if args.steps_per_epoch is not None else pub["steps_per_epoch"]),
            stop=args.stop, init=args.init, eval_batches=_int("--eval-batches", args.eval_batches, 1))
    except ValueError as exc:
        raise _config_error(exc) from None
    seeds = parse_seeds(args.seeds) if args.seeds is not None else pub["seeds"]
    output = _output_dir(args.output)
    workers = _workers(args)
    scheduler = _scheduler(args)

    def work():
        groups = jobs_mod.split_seeds(seeds, workers if scheduler is None else len(seeds))
        job_list = [{"experiment": "fig2", "config": config.to_dict(), "seeds": g} for g in groups]
        results = _run_single_or_pool(jobs_mod.fig2_job, job_list, args, workers, scheduler, "fig2",
                                      config.epochs)
        runs = [r for res in results for r in res["runs"]]
        summ = measure.combine_summaries(runs)
        payload = {"heatmap": summ["heatmap"], "heatmap_std": summ["heatmap_std"],
                   "separability": summ["separability"], "settings": {**config.to_dict(), "seeds": seeds},
                   "runs": runs}
        if output is not None:
            from . import plots

            output.mkdir(parents=True, exist_ok=True)
            atomic_write_text(output / "fig2.json", _json_out(payload))
            title = (f"{config.parameterization}, QK {config.lr_qk:g} / OV {config.lr_ov:g}"
                     + (f", ramp x{config.qk_ramp:g}" if config.qk_ramp != 1 else ""))
            plots.save_figure(plots.plot_fig2_heatmaps(
                [dict(title=title, heatmap=payload["heatmap"], heatmap_std=payload["heatmap_std"],
                      n_seeds=len(seeds))], ncols=1), output, f"fig2_{config.parameterization}")
        return payload
    return work, _format_fig2


def _format_fig2(payload):
    lines = ["heatmap (% of sequences; rows: relevant-token attention 0-.2 ... .8-1; "
             "columns: label probability 0-.2 ... .8-1)"]
    for row in payload["heatmap"]:
        lines.append("  " + " ".join(f"{v:6.1f}" for v in row))
    sep = payload["separability"]
    lines.append(f"separability {sep['mean']:.4g} +- {sep['std']:.3g}")
    for r in payload["runs"]:
        lines.append(f"seed {r['seed']}: steps {r['steps']}, stopped epoch {r['stopped_epoch']}, "
                     f"final loss {r['final_loss']:.4g}, accuracy {r['accuracy']:.4f}, "
                     f"relevant attention {r['relevant_attention']:.4f}")
    return "\n".join(lines)


def cmd_fig3(args):
    from . import jobs as jobs_mod
    from . import sgd

    alphas = _list("--alphas", args.alphas, lambda t: _float("alpha", t))
    for a in alphas:
        if not 0 < a <= 1:
            raise UsageError(f"alpha must lie in (0, 1]; got {a!r}")
    try:
        config = sgd.Fig3Config(
            output_circuit=args.output_circuit, alphas=tuple(alphas), epochs=_int("--epochs", args.epochs, 1),
            steps_per_epoch=_int("--steps-per-epoch", args.steps_per_epoch, 1),
            batch_size=_int("--batch-size", args.batch_size, 4), seq_len=_int("--seq-len", args.seq_len, 3),
            lr=_float("--lr", args.lr), eval_batches=_int("--eval-batches", args.eval_batches, 1),
            seed=_int("--seed", args.seed, 0))
    except ValueError as exc:
        raise _config_error(exc) from None
    output = _output_dir(args.output)
    workers = _workers(args)
    scheduler = _scheduler(args)

    def work():
        job = {"experiment": "fig3", "config": config.to_dict()}
        res = _run_single_or_pool(jobs_mod.fig3_job, [job], args, workers, scheduler, "fig3", config.epochs)[0]
        payload = {"alpha": res["alpha"], "loss": res["loss"], "incentive": res["incentive"],
                   "final_loss": res["final_loss"], "loss_shifted": res["loss_shifted"],
                   "train_loss": res["train_loss"], "settings": config.to_dict()}
        if output is not None:
            from . import plots

            output.mkdir(parents=True, exist_ok=True)
            atomic_write_text(output / "fig3.json", _json_out(payload))
            plots.save_figure(plots.plot_fig3({config.output_circuit: payload}), output,
                              f"fig3_{config.output_circuit}")
        return payload

    def fmt(p):
        lines = ["alpha   L(epoch 0)   L(final)   max incentive   final incentive"]
        for a, L, inc in zip(p["alpha"], p["loss"], p["incentive"]):
            lines.append(f"{a:5.3g}   {L[0]:10.4f}   {L[-1]:8.4f}   {max(inc):13.4g}   {inc[-1]:15.4g}")
        return "\n".join(lines)
    return work, fmt


def cmd_sweep(args):
    from . import jobs as jobs_mod
    from . import sweep as sweep_mod

    params = _list("--parameterizations", args.parameterizations, str)
    for p in params:
        if p not in PARAMETERIZATIONS:
            raise UsageError(f"--parameterizations: unknown parameterization {p!r} (valid: {','.join(PARAMETERIZATIONS)})")
    ratios = _list("--ratios", args.ratios, lambda t: _float("ratio", t))
    n_seeds = _int("--seeds", args.seeds, 1)
    target = _float("--target-loss", args.target_loss)
    try:
        jobs = sweep_mod.sweep_jobs(
            params, ratios, n_seeds, target, max_steps=_int("--max-steps", args.max_steps, 1),
            lr_ov=_float("--lr-ov", args.lr_ov), seq_len=_int("--seq-len", args.seq_len, 3),
            batch_size=_int("--batch-size", args.batch_size, 1),
            steps_per_epoch=_int("--steps-per-epoch", args.steps_per_epoch, 1), init=args.init,
            eval_batches=_int("--eval-batches", args.eval_batches, 1))
    except ValueError as exc:
        raise _config_error(exc) from None
    output = _output_dir(args.output)
    if not args.resume and ((output / "results.csv").exists() or
                            ((output / "runs").is_dir() and any((output / "runs").iterdir()))):
        raise UsageError(f"--output {str(output)!r} already holds a sweep; pass --resume to continue it "
                         "or choose another directory")
    workers = _workers(args)
    scheduler = _scheduler(args)

    def work():
        from . import plots
        from .runner import ResultStore, run_jobs

        output.mkdir(parents=True, exist_ok=True)
        results = run_jobs(jobs_mod.sweep_job, jobs, workers=workers, scheduler=scheduler,
                           store=ResultStore(output / "runs"), progress=_progress(args), desc="sweep")
        rows = sweep_mod.rows_from_results(results)
        sweep_mod.write_csv(rows, output / "results.csv")
        summary = sweep_mod.summarize(rows)
        payload = {"summary": summary, "spearman": sweep_mod.spearman(rows),
                   "settings": {"parameterizations": list(dict.fromkeys(params)),
                                "ratios": list(dict.fromkeys(ratios)), "seeds": n_seeds,
                                "target_loss": target, **{k: jobs[0]["config"][k] for k in
                                                          ("lr_ov", "seq_len", "batch_size", "steps_per_epoch",
                                                           "max_steps", "init", "eval_batches")}}}
        prediction = None
        if not args.no_theory:   # the theory at matched loss: expected-count gradient flow (issue 9)
            from ..authors_task import sweep_prediction
            cfg = jobs[0]["config"]
            try:
                prediction = sweep_prediction(payload["settings"]["parameterizations"],
                                              payload["settings"]["ratios"], target, lr_ov=cfg["lr_ov"],
                                              seq_len=cfg["seq_len"], init=cfg["init"])
            except (ValueError, RuntimeError) as exc:   # the measured sweep stands without it
                print(f"experiments: warning: no theory overlay ({exc})", file=sys.stderr)
            else:
                payload["prediction"] = {P: {"ratio": [float(x) for x in rx],
                                             "relevant_attention": [float(y) for y in ry]}
                                         for P, (rx, ry) in prediction.items()}
        atomic_write_text(output / "sweep.json", _json_out(payload))
        plots.save_figure(plots.plot_sweep(summary, prediction, title=f"training stopped at loss {target:g}"),
                          output, "sweep")
        return payload

    def fmt(p):
        lines = ["param  ratio   reached   attention (95% CI)          label prob   loss      steps"]
        for s in p["summary"]:
            lo, hi = s["relevant_attention_ci95"]
            ci = "" if lo is None else f"[{lo:.3f}, {hi:.3f}]"
            lines.append(f"{s['parameterization']}  {s['ratio']:6.3g}   {s['reached']}/{s['n']}       "
                         f"{s['relevant_attention_mean']:.4f} {ci:18s}  {s['label_probability_mean']:.4f}     "
                         f"{s['loss_mean']:.4f}    {s['steps_mean']:.0f}")
        for name, sp in p["spearman"].items():
            lines.append(f"Spearman(ratio, attention) {name}: rho = {sp['rho']}, p = {sp['pvalue']}")
        return "\n".join(lines)
    return work, fmt


def cmd_reproduce(args):
    from . import reproduce as rep

    output = _output_dir(args.output)
    workers = _workers(args)
    scheduler = _scheduler(args)

    if args.collect and not (output / "runs").is_dir():
        raise UsageError(f"--collect: no runs in {str(output / 'runs')!r}")

    def work():
        if args.collect:
            return rep.collect(output, quick=args.quick)
        return rep.reproduce(output, workers=workers, scheduler=scheduler, progress=_progress(args),
                             quick=args.quick, shortest_first=args.shortest_first)

    def fmt(report):
        return rep.format_report(report)
    return work, fmt


COMMANDS = {"fig2": cmd_fig2, "fig3": cmd_fig3, "sweep": cmd_sweep, "reproduce": cmd_reproduce}


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        work, fmt = COMMANDS[args.command](args)   # validates everything, no work yet
    except UsageError as exc:
        print(f"experiments: error: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    payload = work()
    try:
        if args.json:
            print(_json_out(payload))
        elif not args.quiet:
            print(fmt(payload))
            print(f"({time.perf_counter() - t0:.1f} s)")
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
