r"""What the experiments' commands share: options, input parsing, output.

Every check here raises :class:`derivations.core.cli.UsageError` (one line,
exit status 2) before any work. The output directory is prepared last
(:func:`output_dir`), after every other input check, so that bad input writes
nothing.
"""
from __future__ import annotations

import re

from derivations.core.cli import UsageError, parse_int, parse_list, parse_number
from derivations.core.optional import require_optional
from derivations.core.output import note, prepare_output_dir
from derivations.core.vocabulary import PARAMETERIZATIONS, is_number_text

__all__ = ["PROG", "add_common", "number", "parse_parameterizations", "parse_seeds", "workers", "run_options",
           "output_dir", "open_directory", "checked", "option_message", "flag_message", "MAX_SEEDS",
           "MAX_CONNECT_TIMEOUT", "CONNECT_TIMEOUT", "warn", "warn_diverged", "DIVERGED"]

#: Program name of the one-line messages.
PROG = "experiments"
#: Most seeds one ``--seeds`` list may name (the memory check then bounds the rest).
MAX_SEEDS = 1_000_000
#: Longest ``--connect-timeout`` (seconds): one day (a longer one overflows the sockets' timeout).
MAX_CONNECT_TIMEOUT = 86400.0
#: ``--connect-timeout`` (seconds) where ``--scheduler`` is given without it.
CONNECT_TIMEOUT = 30.0


def add_common(p, *, output_required=False):
    """The options every command takes: workers, scheduler, output, JSON, quiet.

    Parameters
    ----------
    p : argparse.ArgumentParser
    output_required : bool, optional
        ``--output`` must be given (``sweep``, ``reproduce``).
    """
    p.add_argument("--workers", default=None,
                   help="local worker processes (integer >= 1; default: the CPU count); "
                        "1 runs in this process; not with --scheduler, whose workers run the runs")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address tcp://host:port of a running Dask distributed scheduler to send the runs to "
                        "(needs the optional extra qkov[distributed]; tls:// is not supported)")
    p.add_argument("--connect-timeout", default=None, metavar="SECONDS",
                   help="with --scheduler: seconds to wait for the scheduler to answer and for a worker to be "
                        "connected to it, before any work, when the runs are sent and while they are still to do "
                        "(in (0, "
                        f"{MAX_CONNECT_TIMEOUT:g}]; default {CONNECT_TIMEOUT:g})")
    p.add_argument("--output", default=None, required=output_required, metavar="DIR",
                   help="directory for results and figures (created and tried before any work)"
                   + ("" if output_required else "; default: print only"))
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no human-readable summary")


def add_dtype(p) -> None:
    """``--dtype``: the floating type of the SGD step (:mod:`numerics.experiments.precision`).

    Parameters
    ----------
    p : argparse.ArgumentParser
    """
    from ..sgd import DTYPES

    p.add_argument("--dtype", default=DTYPES[0], choices=DTYPES,
                   help="floating type of the SGD step: float64 (default; bitwise reproducible) or float32 "
                        "(as the authors trained; faster; a float32 run is another run for --resume)")


def number(name, text) -> float:
    """A finite number ``> 0``.

    Parameters
    ----------
    name : str
        The option, for the message.
    text : str

    Returns
    -------
    float

    Raises
    ------
    derivations.core.cli.UsageError
        Not such a number.
    """
    return parse_number(name, text, positive=True)


def parse_parameterizations(text) -> list:
    """``--parameterizations``: comma-separated names of CACO, CAFO, FACO, FAFO (any case), each
    at most once, in the order given.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str

    Raises
    ------
    derivations.core.cli.UsageError
        An empty list or item, a name that is not a parameterization or one given twice (one line).

    >>> parse_parameterizations("faco, CACO")
    ['FACO', 'CACO']
    >>> parse_parameterizations("faco, CACO,FACO")
    Traceback (most recent call last):
    ...
    derivations.core.cli.UsageError: --parameterizations names FACO twice
    """
    def one(item):
        if item.upper() not in PARAMETERIZATIONS:
            raise UsageError(f"--parameterizations: unknown parameterization {item!r}; choose from "
                             f"{','.join(PARAMETERIZATIONS)}")
        return item.upper()
    return parse_list("--parameterizations", text, one, distinct=True)


_RANGE = re.compile(r"^([0-9]+)-([0-9]+)$")


def parse_seeds(text) -> list:
    """``"1234,1236-1238"`` -> ``[1234, 1236, 1237, 1238]``.

    Parameters
    ----------
    text : str
        Comma-separated integers >= 0 and ranges ``a-b`` in ASCII digits; the seeds distinct, at most
        :data:`MAX_SEEDS` (a range is sized before it is expanded).

    Returns
    -------
    list of int

    Raises
    ------
    derivations.core.cli.UsageError
        Otherwise.
    """
    parts = [part.strip() for part in str(text).split(",")]
    spans = []
    for part in parts:
        match = _RANGE.match(part)
        try:
            if not (match or is_number_text(part, integer=True)):     # int() reads 1_0 and 5 in other scripts
                raise ValueError(part)
            a, b = (int(match[1]), int(match[2])) if match else (int(part), int(part))
            if b < a:                       # (a range's ends are >= 0: a negative seed is no range)
                raise ValueError(part)
        except ValueError:
            raise UsageError(f"--seeds must be comma-separated integers >= 0 (ranges a-b allowed); "
                             f"got {text!r}") from None
        if a < 0:
            raise UsageError(f"--seeds must be integers >= 0; got {text!r}")
        spans.append((a, b))
    count = sum(b - a + 1 for a, b in spans)
    if count > MAX_SEEDS:
        raise UsageError(f"--seeds names {count} seeds; at most {MAX_SEEDS}")
    seeds = [s for a, b in spans for s in range(a, b + 1)]
    seen = set()
    for seed in seeds:
        if seed in seen:
            raise UsageError(f"--seeds must be distinct: names {seed} twice")
        seen.add(seed)
    return seeds


def workers(args) -> int:
    """``--workers``: an integer >= 1, default the CPUs this process may run on
    (:func:`~numerics.experiments.runner.usable_cpus`); refused with ``--scheduler``, whose workers run
    the jobs (the memory check then counts one process here: :func:`~numerics.experiments.memory.processes`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    int

    Raises
    ------
    derivations.core.cli.UsageError
        Not an integer >= 1, or given with ``--scheduler``.
    """
    if args.workers is not None and getattr(args, "scheduler", None) is not None:
        raise UsageError("--workers: not with --scheduler (the runs go to the Dask scheduler's workers; "
                         "start more of them there)")
    if args.workers is None:
        from ..runner import usable_cpus
        return usable_cpus()
    return parse_int("--workers", args.workers, 1)


def run_options(args, workers: int) -> dict:
    """How the command's jobs run: the options of :func:`~numerics.experiments.runner.run_jobs`.
    ``--scheduler`` is checked here, before any work: the address form, a Dask scheduler answering
    and a worker connected to it within ``--connect-timeout`` seconds.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    workers : int
        Local worker processes (:func:`workers`).

    Returns
    -------
    dict
        ``workers``, ``scheduler`` (the address, or None without ``--scheduler``), ``connect_timeout``
        (seconds) and ``progress`` (not ``--quiet``).

    Raises
    ------
    derivations.core.cli.UsageError
        A bad timeout (over :data:`MAX_CONNECT_TIMEOUT`, or without ``--scheduler``) or address, or no scheduler or
        worker in time.
    """
    if args.connect_timeout is not None and args.scheduler is None:
        raise UsageError("--connect-timeout: only with --scheduler (how long to wait for the Dask scheduler and "
                         "its workers; the runs here do not wait)")
    timeout = CONNECT_TIMEOUT if args.connect_timeout is None else number("--connect-timeout", args.connect_timeout)
    if timeout > MAX_CONNECT_TIMEOUT:
        raise UsageError(f"--connect-timeout must be a number of seconds in (0, {MAX_CONNECT_TIMEOUT:g}]; "
                         f"got {args.connect_timeout!r}")
    if args.scheduler is not None:
        from ..cluster import check_scheduler

        try:
            check_scheduler(args.scheduler, timeout=timeout, need_workers=True)
        except ValueError as exc:
            hint = "; start a worker, or wait longer with --connect-timeout" if "no worker" in str(exc) else ""
            raise UsageError(f"--scheduler: {exc}{hint}") from None
    return {"workers": workers, "scheduler": args.scheduler, "connect_timeout": timeout, "progress": not args.quiet}


def output_dir(args):
    """``--output`` created and probed (:func:`derivations.core.output.prepare_output_dir`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    pathlib.Path or None
        None without ``--output``.

    Raises
    ------
    derivations.core.cli.UsageError
        The directory cannot be created or written, or matplotlib, which draws its figures, is not installed.
    """
    if args.output is None:
        return None
    require_optional("matplotlib", "plot", "--output (its figures)")
    try:
        return prepare_output_dir(args.output)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def open_directory(args, kind: str, check=None):
    """``--output`` (:func:`output_dir`) opened and locked as a ``kind`` experiment's
    :class:`~numerics.experiments.directory.ExperimentDirectory`, then checked by ``check``;
    a directory refused is closed as such (nothing in it changed).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    kind : str
        ``"sweep"``, ``"reproduction"``, ``"fig2"`` or ``"fig3"``.
    check : callable, optional
        ``check(directory)``, before any work: raises to refuse the directory.

    Returns
    -------
    directory : numerics.experiments.directory.ExperimentDirectory
    checked : object
        What ``check`` returned (None without ``check``).

    Raises
    ------
    derivations.core.cli.UsageError
        The directory cannot be created, written or used as asked, or ``check`` refused it.
    """
    from ..directory import ExperimentDirectory

    def reproduction_bytes():      # (imported only where a stored run is read without a sweep's settings)
        from ..reproduce import run_bytes
        return run_bytes()
    directory = ExperimentDirectory(output_dir(args), kind, run_bytes=reproduction_bytes)
    try:
        checked = None if check is None else check(directory)
    except BaseException:
        directory.close(refused=True)
        raise
    return directory, checked


#: internal field name -> the option that sets it (messages name the option)
OPTION_NAMES = {"lr_qk": "--lr-qk", "lr_ov": "--lr-ov", "qk_ramp": "--qk-ramp", "seq_len": "--seq-len",
                "batch_size": "--batch-size", "epochs": "--epochs", "steps_per_epoch": "--steps-per-epoch",
                "eval_batches": "--eval-batches", "max_steps": "--max-steps", "target_loss": "--target-loss",
                "lr": "--lr", "seed": "--seed", "alphas": "--alphas", "ratio": "--ratios"}
_FIELD = re.compile(r"\b(" + "|".join(OPTION_NAMES) + r")\b")


def option_message(text: str) -> str:
    """``text`` with every internal field name (``batch_size``) replaced by its option (``--batch-size``).

    Parameters
    ----------
    text : str or Exception

    Returns
    -------
    str
    """
    return _FIELD.sub(lambda m: OPTION_NAMES[m[1]], str(text))


def flag_message(exc, flags) -> str:
    """The message of ``exc`` with its first word, a parameter's name, replaced by its option.

    Parameters
    ----------
    exc : Exception
        A ``ValueError`` whose message starts with the parameter's name (``ratio must be ...``).
    flags : dict
        ``{name: option}``.

    Returns
    -------
    str
        The message, as it is where its first word is not in ``flags``.
    """
    text = str(exc)
    name = text.split(" ", 1)[0]
    return flags[name] + text[len(name):] if name in flags else text


def checked(call, *args, flags=None, task_source=None, **kwargs):
    """``call(*args, **kwargs)``, its ValueError as a :class:`~derivations.core.cli.UsageError` naming the option.

    Parameters
    ----------
    call : callable
        A settings class (:class:`~numerics.experiments.sgd.Fig2Config`, ...) or a check of
        settings (:func:`~numerics.experiments.sweep.sweep_jobs`, ...).
    *args, **kwargs
        Its arguments.
    flags : dict, optional
        ``{name: option}`` for a message that starts with a parameter's name (:func:`flag_message`);
        default: every internal field name in the message becomes its option (:func:`option_message`).
    task_source : argparse.Namespace, optional
        The command line of a command with ``--task``/``--params``: a message about the task's parameter values
        names where each comes from (:func:`~numerics.experiments.commands.task_options.attributed`).

    Returns
    -------
    object
        ``call(*args, **kwargs)``.

    Raises
    ------
    derivations.core.cli.UsageError
        What ``call`` refused, with the option's name.
    """
    try:
        return call(*args, **kwargs)
    except ValueError as exc:
        text = option_message(exc) if flags is None else flag_message(exc, flags)
        if task_source is not None:
            from .task_options import attributed, param_values
            text = attributed(task_source.task, text, param_values(task_source))
        raise UsageError(text) from None


#: The runs reported diverged by the command now running (its exit status is then 3).
DIVERGED: list = []


def warn(message: str) -> None:
    """One line ``experiments: warning: ...`` on stderr.

    Parameters
    ----------
    message : str
    """
    note(f"{PROG}: warning: {message}")


def warn_diverged(runs, name, measurements: str = "null", dtype: str = "float64") -> None:
    """Report each diverged run on stderr (one line) and remember it for the exit status (:data:`DIVERGED`).

    A float32 run's line also says that its divergence may be the format's: float32's range ends near 3.4e38,
    and a run whose scores pass it diverges where the same run in float64 trains (``docs/experiments.md``,
    diverged runs: FAFO on the authors' task from learning-rate ratios about 2e36).

    Parameters
    ----------
    runs : iterable of dict
        Runs or sweep rows, with ``status`` and ``steps`` (trained when the loss or the parameters
        stopped being finite).
    name : callable
        ``name(run)``: the run, as its line names it.
    measurements : str, optional
        What a diverged run's measurements are (default ``"null"``).
    dtype : {"float64", "float32"}, optional
        The runs' floating-point format (default ``"float64"``).
    """
    hint = ("; in float32 this may be the format's range (it ends near 3.4e38), not SGD's: --dtype float64 tells"
            if dtype == "float32" else "")
    for run in runs:
        if run.get("status") == "diverged":
            what = name(run)
            DIVERGED.append(what)
            warn(f"{what} diverged (non-finite training loss or parameters after {run['steps']} steps): stopped "
                 f"there, its measurements are {measurements}{hint}")
