r"""Command line of the experiments: ``python -m numerics.experiments {fig2,fig3,sweep,reproduce,predict,boundary}``.

``fig2``
    One Figure-2 configuration (defaults: the published equal-rate run of the
    chosen parameterization, with its schedule and seeds); prints the heatmap
    or, with ``--json``, one object with ``heatmap``, ``heatmap_std``,
    ``separability``, ``settings`` and ``runs`` (each with its ``status``).
``fig3``
    The fixed-attention runs of Figure 3 (``--json``: ``alpha``, ``loss``,
    ``incentive``, ``final_loss``).
``sweep``
    The matched-loss sweep over ``eta_QK / eta_OV``: ``OUTPUT/results.csv``,
    ``sweep.png/pdf``, ``sweep.json``; ``--resume`` continues a killed sweep
    (with the settings it was started with), ``--resume --extend`` adds
    parameterizations, ratios or seeds to it.
``reproduce``
    Every published Figure-2/3 run; ``OUTPUT/report.md``, ``report.json``
    and figures.
``predict``
    The theory alone (no SGD): the expected-count flow of the authors' task
    (or ``--task``) from each sweep seed's initial matrices, one record per (parameterization,
    ratio, seed, target) (:mod:`numerics.experiments.predict`); ``--store DIR`` keeps the finished flows,
    and the same command resumes from them.
``boundary``
    The theory alone: the ratio eta_QK/eta_OV at which the attention on the
    query's own token equals that on the relevant tokens at each target loss,
    from zero through the master curve (:func:`numerics.dynamics.boundary`) or,
    with ``--init authors|identity|uniform`` (the authors' task), on the
    expected-count flow of each seed's start
    (:func:`numerics.experiments.flow_crossover.flow_boundary`); one record per
    (parameterization, [seed,] target loss) with ``crossover_ratio``,
    ``crossover_lambda``, ``reason``.

The JSON is always valid: a number that is undefined (the separability when
no evaluation sequence holds a relevant token, the measurements of a diverged
run) is ``null``. A run whose training loss stops being finite, or whose
parameters are not finite where it stops, is stopped there with ``status``
``"diverged"`` (one warning line on stderr); the other runs go on and every
output is still written.

Exit status: **0** done, every output written; **130** stopped by Ctrl-C (one
line on stderr saying what is kept: the finished runs of a sweep or a
reproduction stay in ``OUTPUT/runs``, predict's finished flows in its ``--store``, and the same
command, with ``--resume`` for a sweep, continues; no temporary file is left); **143** stopped by
SIGTERM (``kill``, ``timeout``, Slurm, systemd: the same, the line says ``terminated``); **2** bad input (one line on
stderr, before any work, nothing written: this includes an output directory
that cannot take files, a sweep directory locked by another sweep or holding a
sweep of other settings); **3** done and every output written, but at least
one run diverged; **1** the work failed or its output could not be written
(one line on stderr: a full disk, a Dask scheduler or a local worker process
lost mid-run, whose finished runs are kept for ``--resume``).

>>> import subprocess, sys
>>> r = subprocess.run([sys.executable, "-m", "numerics.experiments", "fig2", "--lr-qk", "-1"],
...                    capture_output=True, text=True)
>>> r.returncode, r.stderr.count("\n")
(2, 1)
"""
from __future__ import annotations

import argparse
import sys
import time

from derivations.core.cli import OneLineParser, UsageError, usage_error
from derivations.core.interrupt import exit_on_interrupt
from derivations.core.output import emit, json_text, note

from .commands import COMMANDS as _NAMES
from .commands import common
from .commands.common import PROG

__all__ = ["build_parser", "main", "COMMANDS", "EXIT_DIVERGED"]


def _command(name: str):
    """The module of the command ``name``, imported on first use: in :func:`main`, inside the guard
    against Ctrl-C (loading NumPy and the commands takes a tenth of a second and more)."""
    import importlib

    return importlib.import_module(f"{__package__}.commands.{name}")


def _prepare(name: str):
    """The ``prepare`` of the command ``name`` (:func:`_command`)."""
    def prepare(args):
        return _command(name).prepare(args)
    return prepare


#: command name -> ``prepare(args) -> (work, format)`` (checks everything, runs nothing)
COMMANDS = {name: _prepare(name) for name in _NAMES}

#: Exit status when every output was written but at least one run diverged.
EXIT_DIVERGED = 3


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``python -m numerics.experiments`` (rendered in the docs)."""
    parser = OneLineParser(prog="python -m numerics.experiments", name=PROG,
                           description="Rerun the paper's synthetic experiments (Figure 2, Figure 3) and a "
                                       "matched-loss sweep over learning-rate ratios, in NumPy.",
                           epilog="Exit status: 0 done; 2 bad input (one line, nothing written); 3 done, but "
                                  "a run diverged (its status says so); 1 the work or its output failed.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{fig2,fig3,sweep,reproduce,predict,boundary}",
                                parser_class=OneLineParser)
    for name in _NAMES:
        _command(name).add_parser(sub)
    return parser


def _kept(args) -> str:
    """What a lost scheduler or Ctrl-C leaves behind, and how to finish the work (in one line: the folder of the
    runs quoted where its name holds a line break or another character that is not printable)."""
    from .store import shown_path

    runs = shown_path(f"{args.output}/runs")
    if args.command == "sweep":
        return f"the finished runs are kept in {runs}: rerun the same command with --resume to complete them"
    if args.command == "reproduce" and args.collect:     # (it trains nothing: it writes the report of the runs)
        return f"the finished runs are kept in {runs}: rerun the same command to write their report"
    if args.command == "reproduce":
        return f"the finished runs are kept in {runs}: rerun the same command to complete them"
    if args.command == "predict" and args.store is not None:
        return f"the finished flows are kept in {shown_path(args.store)}: rerun the same command to complete them"
    if args.command == "predict":
        return "predict keeps no partial results: rerun the command (with --store DIR to keep the finished flows)"
    return f"{args.command} keeps no partial results: rerun the command"


def _run(work, args):
    """``work()``; a failure that loses nothing already saved is one line on stderr (exit 1)."""
    from .cluster import SchedulerLost
    from .pool import WorkerLost
    from .store import EditedRecord, shown_path

    try:
        return work(), 0
    except (SchedulerLost, WorkerLost) as exc:
        note(f"{PROG}: error: {exc}; {_kept(args)}")
    except EditedRecord as exc:     # a run file changed as the work began (before: the directory is refused)
        note(f"{PROG}: error: {exc}")
    except OSError as exc:
        name = exc.filename2 or exc.filename          # (an atomic write's rename: the file it replaces)
        where = f" ({shown_path(name)})" if name else ""
        note(f"{PROG}: error: cannot write the output{where}: {exc.strerror or exc}; {_kept(args)}")
    return None, 1


def _interrupted(argv):
    """What an interrupted command keeps (:func:`_kept`), for its one line: nothing before a sweep's
    settings, or a reproduction's folder of runs, are written."""
    import os

    from .directory import RUNS, SETTINGS_FILE

    try:
        args = build_parser().parse_args(argv)
    except UsageError:
        return None
    started = {"sweep": SETTINGS_FILE, "reproduce": RUNS}.get(args.command)
    if args.command == "predict" and args.store is not None and not os.path.lexists(args.store):
        return "predict had kept nothing yet: rerun the command"
    if started is not None and not os.path.lexists(os.path.join(args.output, started)):
        return f"{args.command} had kept nothing yet: rerun the command"
    return _kept(args)


@exit_on_interrupt(PROG, note=_interrupted)
def main(argv=None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status (the module docstring).
    """
    try:
        args = build_parser().parse_args(argv)
        work, fmt = COMMANDS[args.command](args)   # validates everything, no work yet
    except UsageError as exc:
        return usage_error(PROG, exc)
    t0 = time.perf_counter()
    common.DIVERGED.clear()
    payload, status = _run(work, args)
    if payload is None:
        return status
    if args.json:
        status = emit(json_text(payload), PROG)
    elif not args.quiet:
        status = emit(f"{fmt(payload)}\n({time.perf_counter() - t0:.1f} s)", PROG)
    if status == 0 and common.DIVERGED:
        status = EXIT_DIVERGED
    return status


if __name__ == "__main__":
    sys.exit(main())
