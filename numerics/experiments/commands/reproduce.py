"""``python -m numerics.experiments reproduce``: every published Figure-2/3 run, report and figures."""
from __future__ import annotations

from pathlib import Path

from derivations.core.cli import UsageError
from derivations.core.optional import require_optional

from . import common

__all__ = ["add_parser", "prepare"]


def add_parser(sub):
    """Add the ``reproduce`` subcommand and its options to ``sub``.

    Parameters
    ----------
    sub : argparse.Action
        The subcommands of ``python -m numerics.experiments`` (what
        :meth:`argparse.ArgumentParser.add_subparsers` returned).
    """
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
    common.add_dtype(rp)
    common.add_common(rp, output_required=True)


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
    require_optional("matplotlib", "plot", "reproduce (the report's figures)")
    from .. import reproduce as rep
    from ..directory import ExperimentDirectory

    run = common.run_options(args, common.workers(args))
    settings = {"quick": args.quick, "dtype": args.dtype}
    if args.collect:    # reads the runs finished so far, also while a reproduction still runs: no lock
        if not (args.output and (Path(args.output) / "runs").is_dir()):
            raise UsageError(f"--collect: no runs in {str(Path(args.output or '') / 'runs')!r}")
        directory = ExperimentDirectory(args.output, "reproduction", lock=False, run_bytes=rep.run_bytes)
        directory.refuse_other_settings(settings, rep.settings_of_jobs(), rep.report_bytes())
        return (lambda: rep.collect(directory, quick=args.quick, dtype=args.dtype)), rep.format_report
    directory, _ = common.open_directory(args, "reproduction",
                                         lambda d: d.refuse_other_settings(settings, rep.settings_of_jobs(),
                                                                           rep.report_bytes()))

    def work():
        with directory:
            report = rep.reproduce(directory, quick=args.quick, shortest_first=args.shortest_first, dtype=args.dtype,
                                   **run)
        for name, published in report["runs"].items():
            common.warn_diverged(published.get("runs", []), lambda r: f"reproduce run {name} seed {r['seed']}",
                                 dtype=args.dtype)
        return report
    return work, rep.format_report
