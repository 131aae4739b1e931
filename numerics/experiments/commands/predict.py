"""``python -m numerics.experiments predict``: the theory beside the sweep (no SGD).

The expected-count gradient flow of a task (:func:`numerics.experiments.predict.predict`)
from each SGD seed's initial matrices, read off where the loss first reaches each target.
It prints a table, or with ``--json`` one object ``{"settings": ..., "records": [...]}``;
``--output FILE`` also writes that object to ``FILE`` (atomically; a file that holds anything
else than the result of the same settings is refused, not replaced); ``--quiet`` hides the
progress bar only.  The flows of each (parameterization, ratio) are one job
(:func:`~numerics.experiments.predict.predict_job`): ``--workers N`` runs them on ``N`` local processes
(the same records, bit for bit), and ``--store DIR`` saves each finished job in ``DIR``
(:class:`~numerics.experiments.store.ResultStore`, one sealed JSON file per job) as it finishes, so that
the same command, interrupted, resumes: the jobs stored there are read back, not run again (a stored
file changed after it was written is refused before any flow); ``DIR`` is locked while predict runs (its
``.lock``, as an experiment's output directory: another predict on it is refused).  A target a flow does not reach is
reported as not reached, and no floating-point warning reaches the user.  Bad input (an unknown
parameterization, a ratio outside :data:`~numerics.experiments.theory.RATIO_RANGE`, a duplicate target, a
target not below a seed's initial loss, ``--lr-ov 1,2``, ``--init-scale`` where no matrix is a multiple
of the identity, an ``--output`` that cannot be written, ``--workers 0``, a ``--store`` that is not a
directory, is in use, holds another experiment's stored runs or an edited file of these settings' flows,
...) prints one line on stderr and exits with status 2 before any flow is run.
"""
from __future__ import annotations

import errno
import math
import os
import stat
from pathlib import Path

from derivations.core.cli import UsageError, parse_int, parse_list
from derivations.core.atomic_file import temporary_name_length
from derivations.core.output import json_text, prepare_output_dir
from derivations.core.vocabulary import PARAMETERIZATIONS

from . import common
from .common import checked, number, parse_parameterizations
from .task_options import add_task_arguments, seq_len_for, task_from_args, task_label

__all__ = ["MAX_SEEDS", "MAX_SEQ_LEN", "add_parser", "prepare", "format_table"]

_FLAGS = {"parameterization": "--parameterizations", "ratio": "--ratios", "target_loss": "--target-loss",
          "init_scale": "--init-scale", "lr_ov": "--lr-ov", "seq_len": "--seq-len", "seeds": "--seeds",
          "init": "--init", "task": "--task"}
#: Most seeds one command line asks for (each random-start seed is one flow of ~0.1-10 s).
MAX_SEEDS = 10_000
#: Longest sequence of the command line (the expected counts are real numbers; any length works).
MAX_SEQ_LEN = 10 ** 9


def add_parser(sub) -> None:
    """Add the ``predict`` subcommand and its options to the subparsers ``sub``.

    Parameters
    ----------
    sub : argparse.Action
        The subcommands of ``python -m numerics.experiments`` (what
        :meth:`argparse.ArgumentParser.add_subparsers` returned).
    """
    from .. import models, theory
    from ..sweep import FIRST_SEED

    pp = sub.add_parser("predict", help="the theory's prediction: the expected-count flow per seed",
                        description="The expected-count gradient flow of the authors' task (or --task) from "
                                    "each SGD seed's initial matrices, read off where the loss first reaches each "
                                    "target: one record per (parameterization, ratio, seed, target) with "
                                    "the flow time in SGD steps, the loss and the attention on relevant "
                                    "tokens / the query's own token / other positions.")
    lo, hi = theory.RATIO_RANGE
    slo, shi = theory.INIT_SCALE_RANGE
    a = pp.add_argument
    a("--parameterizations", default=",".join(PARAMETERIZATIONS), metavar="P[,P...]",
      help="comma-separated subset of " + ",".join(PARAMETERIZATIONS) + " (default: all)")
    a("--ratios", default="1,2,5,10,20", metavar="R[,R...]",
      help=f"distinct learning-rate ratios eta_QK / eta_OV, each in [{lo:g}, {hi:g}] (default 1,2,5,10,20)")
    a("--target-loss", default="0.1", metavar="L[,L...]",
      help=f"distinct losses at which the flow is read off, each in [{theory.TARGET_LOSS_MIN:g}, initial "
           "loss) (sorted high to low; one flow answers all; default 0.1)")
    a("--seeds", default="1", metavar="K",
      help=f"number of seeds, numbered as the sweep's: {FIRST_SEED}, {FIRST_SEED + 1}, ... (integer in "
           f"[1, {MAX_SEEDS}]; default 1); each starts from that SGD seed's initial matrices")
    a("--init", default="authors", choices=models.INITS,
      help="the SGD models' initialization: the notebooks' per parameterization, 1e-6 I everywhere, "
           "or uniform(+-1/sqrt(columns)) everywhere (default authors, as the sweep's)")
    a("--init-scale", default=None, metavar="S",
      help=f"scale of the identity matrices of --init identity or authors, in [{slo:g}, {shi:g}] "
           "(default 1e-6, the SGD models'; refused where no matrix is a multiple of I, e.g. --init "
           "uniform)")
    a("--seq-len", default=None, metavar="N",
      help=f"sequence length: context, query and label (integer in [3, {MAX_SEQ_LEN}]; default "
           "the task's own length, 64 for the authors')")
    add_task_arguments(pp)
    a("--lr-ov", default="0.01", metavar="X",
      help="OV learning rate: converts flow time to SGD steps (default 0.01)")
    a("--output", default=None, metavar="FILE",
      help="also write the JSON object to FILE (atomically; its directory must exist; an existing FILE "
           "holding anything else than the result of the same settings is refused, not replaced)")
    a("--workers", default="1",
      help="local worker processes (integer >= 1; default 1, in this process: a flow takes milliseconds, "
           "starting a worker a second), each running the flows of one parameterization and ratio at a time; "
           "the records are the same bits whatever the workers")
    a("--store", default=None, metavar="DIR",
      help="save the flows of each parameterization and ratio in DIR as they finish (one sealed JSON file "
           "each; DIR is created if missing): the same command with the same --store reads the flows "
           "stored there back instead of running them again, so an interrupted predict resumes; a stored file "
           "changed after it was written is refused, not replaced")
    a("--json", action="store_true", help="print one JSON object on stdout")
    a("--quiet", action="store_true", dest="no_bar", help="no progress bar (the table or JSON is still printed)")
    pp.set_defaults(quiet=False)


def _settings(args) -> tuple:
    """``(settings, init_scale)``: the checked settings of :func:`~numerics.experiments.predict.predict`
    and the ``--init-scale`` given (None if none), or a one-line UsageError."""
    from ..predict import check_settings

    params = parse_parameterizations(args.parameterizations)
    ratios = parse_list("--ratios", args.ratios, lambda t: number("--ratios", t), distinct=True)
    targets = parse_list("--target-loss", args.target_loss, lambda t: number("--target-loss", t))
    seeds = parse_int("--seeds", args.seeds, 1, MAX_SEEDS)
    st = task_from_args(args)
    seq_len = parse_int("--seq-len", seq_len_for(st, args), 3, MAX_SEQ_LEN)
    lr_ov = number("--lr-ov", args.lr_ov)
    scale = None if args.init_scale is None else number("--init-scale", args.init_scale)
    return checked(check_settings, params, ratios, targets, seeds, args.init, seq_len, lr_ov, scale,
                   task=st.name, task_params=st.params, flags=_FLAGS), scale


#: Bytes of one record in the ``--output`` file, with a margin (about 550 with every field, the engine's
#: one-line ``closed_form_reason`` beside them).
_RECORD_BYTES = 4096


def _output_file(text, settings):
    """``--output FILE``: a new or regular file (not a link, which the atomic write would replace, nor a
    device or a FIFO) whose directory exists and takes files (really probed, with a file named as long as
    the atomic write's temporary file: :func:`derivations.core.output.prepare_output_dir`), and which holds
    no other result than this one of ``settings`` (None if not given)."""
    if text is None:
        return None
    path = Path(text)
    if (not text or (os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode))
            or not path.parent.is_dir()):
        raise UsageError(f"--output must name a new or regular file (not a directory, a link or a device) in an "
                         f"existing, writable directory; got {text!r}")
    try:
        prepare_output_dir(path.parent, name="its directory", longest_name=temporary_name_length(path.name))
    except ValueError as exc:
        raise UsageError(f"--output {text[:80]!r}: {exc}") from None
    size, limit = (os.lstat(path).st_size if os.path.lexists(path) else 0), _output_bytes(settings)
    if size > limit:
        raise UsageError(f"--output {text!r} is larger ({size} bytes) than the predict result of these settings "
                         f"can be ({limit} bytes): it holds something else, which it would replace; choose another "
                         "file (or remove it)")
    if os.path.lexists(path) and not _holds_result_of(path, settings):
        raise UsageError(f"--output {text!r} holds something else than the predict result of these settings, "
                         "which it would replace; choose another file (or remove it)")
    return path


def _output_bytes(settings) -> int:
    """The most bytes the result of ``settings`` takes: its settings, one record per (parameterization,
    ratio, seed, target)."""
    from ..jobs import OUTPUT_BASE_BYTES

    records = math.prod(len(settings[k]) for k in ("parameterizations", "ratios", "seeds", "target_losses"))
    return OUTPUT_BASE_BYTES + 2 * len(json_text(settings)) + records * _RECORD_BYTES


def _holds_result_of(path, settings) -> bool:
    """Whether the regular file ``path`` holds a predict result of ``settings`` (it may be written again);
    a file larger than such a result (:func:`_output_bytes`) does not, and is not read."""
    import json

    from derivations.core.atomic_file import read_bounded

    try:
        stored = json.loads(read_bounded(path, _output_bytes(settings)).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(stored, dict) and stored.get("settings") == json.loads(json_text(settings))


def _store_bytes(settings) -> int:
    """The most bytes a stored job of ``settings`` takes: its job (a task file's text among it) and one record
    per seed and target."""
    from ..jobs import OUTPUT_BASE_BYTES

    return OUTPUT_BASE_BYTES + len(settings["seeds"]) * len(settings["target_losses"]) * _RECORD_BYTES


def _store(text, settings):
    """``--store DIR``: a directory, or a new one whose place takes the store's files (really probed:
    :func:`~numerics.experiments.store.probe_store_directory`), none of whose files of the jobs of ``settings``
    was changed after it was written, locked (:func:`_lock`): ``(open, lock)``, ``open()`` making the store, the
    lock held until released (None if not given)."""
    if text is None:
        return None
    from ..predict import predict_jobs, valid_result
    from ..store import EditedRecord, ResultStore, probe_store_directory

    path = Path(text)
    if not text or (os.path.lexists(path) and not path.is_dir()):
        raise UsageError(f"--store must name a directory, new or of stored flows (not a file); got {text!r}")
    try:
        probe_store_directory(path, "--store")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    limit = _store_bytes(settings)
    other = _other_run(path, limit)
    if other is not None:
        raise UsageError(f"--store {text!r} holds a stored run of another experiment ({other}), not a predict flow: "
                         "a predict store is a directory of its own (its files would be taken for that "
                         "experiment's runs); choose another directory")
    lock = _lock(path, text)
    try:
        stored = ResultStore(path, validate=valid_result, read_only=True, max_bytes=limit)
        for job in predict_jobs(settings):
            stored.get(job)
    except EditedRecord as exc:
        lock.release(refused=True)
        raise UsageError(f"--store {text!r} holds a stored flow: {exc}") from None
    return lambda: ResultStore(path, validate=valid_result, max_bytes=limit), lock


def _other_run(path, limit):
    """``"<file>: <experiment>"`` of the first stored file in ``path`` (the most ``limit`` bytes read, not following a
    link) whose job is another experiment's than predict's (a sweep's or a reproduction's ``runs``), else None."""
    import json

    from derivations.core.atomic_file import read_bounded

    for entry in sorted(path.glob("*.json")) if path.is_dir() else ():
        try:
            record = json.loads(read_bounded(entry, limit, follow_links=False).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            continue            # (not a stored run: not read as one)
        job = record.get("job") if isinstance(record, dict) else None
        if isinstance(job, dict) and job.get("experiment", "predict") != "predict":
            return f"{entry.name}: {str(job['experiment'])[:40]}"
    return None


def _lock(path, text):
    """The lock of the store's directory (made here where new: the last check), held until the work ends: another
    predict, or an experiment, on the same directory is refused (:class:`~numerics.experiments.lock.DirectoryLock`)."""
    from ..lock import DirectoryLock

    try:
        path.mkdir()
    except FileExistsError:
        pass
    except OSError as exc:
        raise UsageError(f"--store {text!r} cannot be made: {exc.strerror or exc}") from None
    return DirectoryLock(path, lambda why: UsageError(f"--store {text!r} {why}"),
                         "another predict, sweep, reproduction, fig2 or fig3 run")


def format_table(payload, source=None) -> str:
    """The human-readable table of a ``predict`` payload (one line per record).

    Parameters
    ----------
    payload : dict
        ``{"settings", "records"}``.
    source : str, optional
        What ``--task`` named (a task file's path is shown beside the task's name).

    Returns
    -------
    str
        A target not reached says why (the record's ``stopped_by``): budget exhausted, the solver
        failed, an overflow, or (none) the flow levelled off above it.
        The engine's state from zero initialization is ``-`` where it has none (a parameterization
        other than CACO, another length, a task it does not reduce); where the engine was asked and
        refused, ``- [k]``, and the table ends with each such reason once, as ``[k] reason``.
    """
    s = payload["settings"]
    task = task_label(s, source)
    scale = f", identity scale {s['init_scale']:g}" if "init_scale" in s else ""
    closed = any("closed_form_method" in r for r in payload["records"])
    lines = [f"expected-count flow of {task} (init {s['init']}{scale}, seq_len {s['seq_len']}, "
             f"lr_ov {s['lr_ov']:g}): attention where the loss first reaches each target",
             "param   ratio   seed  target        steps      loss  relevant    self   other     Lambda"
             + ("  engine, zero init (method)" if closed else "")]
    reasons = {}
    for r in payload["records"]:
        head = f"{r['parameterization']:6}{r['ratio']:7g}{r['seed']:7d}  {r['target_loss']:<7g}"
        if not r["reached"]:
            lines.append(head + "   not reached: " + _STOPPED[r.get("stopped_by")])
            continue
        lam = r["master_lambda"]
        lines.append(head + f"{r['steps']:12.1f}{r['loss']:10.4g}{r['relevant_attention']:10.4f}"
                     f"{r['self_attention']:8.4f}{r['other_attention']:8.4f}"
                     f"{'-' if lam is None else format(lam, '.4g'):>11}" + _engine_cell(r, reasons))
    return "\n".join(lines + [f"[{k}] {why}" for why, k in reasons.items()])


#: A target not reached, by the record's ``stopped_by``, in the table.
_STOPPED = {"budget": "budget exhausted (the flow spent its max_nfev gradient evaluations)",
            "solver": "the solver failed",
            "overflow": "the flow overflowed", None: "the flow levelled off above the target"}


def _engine_cell(record, reasons) -> str:
    """The engine's column of a reached ``record``: its state and method, ``-`` where it has none, and
    ``- [k]`` where it refused for the reason numbered ``k`` in ``reasons`` (``{reason: k}``, extended)."""
    if "closed_form_method" not in record:
        return ""
    value, why = record["closed_form_relevant_attention"], record.get("closed_form_reason")
    if value is not None:
        return f"  {value:.4f} ({record['closed_form_method']})"
    return "  -" if why is None else f"  - [{reasons.setdefault(why, len(reasons) + 1)}]"


def prepare(args):
    """Check every option (before any flow); return ``(work, format_table)``.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    tuple
        ``work()`` returns the payload ``{"settings", "records"}`` (and writes ``--output``; with
        ``--store``, saves each finished job there and reads back those stored).

    Raises
    ------
    derivations.core.cli.UsageError
        Bad input (one line).
    """
    from derivations.core.atomic_file import atomic_write_text

    from ..predict import predict

    s, init_scale = _settings(args)
    workers = common.workers(args)
    output = _output_file(args.output, s)
    store, lock = _store(args.store, s) or (None, None)

    def work():
        if lock is not None:
            lock.record_process()
        try:
            records = predict(s["parameterizations"], s["ratios"], s["target_losses"], s["seeds"], s["init"],
                              s["seq_len"], s["lr_ov"], init_scale=init_scale, workers=workers,
                              store=None if store is None else store(), progress=not args.no_bar, task=args.task,
                              task_params=s.get("task_params", ()))
        finally:
            if lock is not None:
                lock.release()
        payload = {"settings": s, "records": records}
        if output is not None:
            if os.path.lexists(output) and not _holds_result_of(output, s):     # written meanwhile
                raise FileExistsError(errno.EEXIST, "it now holds something else than the predict result of "
                                      "these settings (written while the flows ran), which is not replaced", output)
            atomic_write_text(output, json_text(payload))
        return payload
    return work, lambda payload: format_table(payload, args.task)
