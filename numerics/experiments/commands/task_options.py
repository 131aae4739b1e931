"""The ``--task NAME|FILE`` and ``--params`` options of the experiments' commands (``fig2``, ``sweep``,
``predict``, ``boundary``): reading them, and naming a task in messages and headers.

Every check here raises :class:`derivations.core.cli.UsageError` (one line, exit status 2) before
any work.
"""
from __future__ import annotations

import re

from derivations.core.cli import UsageError, parse_int, parse_number

from .. import task_sampling

__all__ = ["add_task_arguments", "param_values", "task_from_args", "task_message", "task_label", "seq_len_for",
           "seq_len_name", "set_by", "attributed"]


def add_task_arguments(parser, default=task_sampling.DEFAULT_TASK, task_help=None) -> None:
    """Add ``--task NAME|FILE`` and ``--params name=value,...`` (``fig2``, ``sweep``, ``predict``,
    ``boundary``) to a parser.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    default : str, optional
        The task when none is given.
    task_help : str, optional
        The help of ``--task`` (default: the task trained or predicted).
    """
    parser.add_argument("--task", default=default, metavar="NAME|FILE",
                        help=task_help or "the task to train / predict (sampled by numerics.experiments."
                                          "task_sampling): a built-in task (derivations.tasks) or a task file "
                                          "(.toml); default authors, the authors' task")
    parser.add_argument("--params", default=None, metavar="NAME=VALUE[,...]",
                        help="the task's parameter values (e.g. m=5,n=50,b=50,M=20,n_c=2; missing ones take "
                             "the task's defaults)")


def param_values(args) -> dict:
    """``--params``: the task's parameter values given, as numbers.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    dict
        ``{name: float}``, empty without ``--params``.

    Raises
    ------
    derivations.core.cli.UsageError
        Not ``name=value,...`` pairs (blank text included: as ``--ratios ''``, an empty ``--params``
        is refused, not read as the defaults, which omitting it gives), or a value that is not a number.
    """
    from derivations.core.cli import parse_params

    raw = {} if args.params is None else parse_params(args.params)
    return {k: parse_number(f"--params {k}", v) for k, v in raw.items()}


def task_from_args(args) -> task_sampling.SampledTask:
    """The :class:`~numerics.experiments.task_sampling.SampledTask` of ``--task``/``--params``.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    numerics.experiments.task_sampling.SampledTask

    Raises
    ------
    derivations.core.cli.UsageError
        One line, before any work: an unknown task or parameter, a bad value or a task that
        cannot be sampled.
    """
    values = param_values(args)
    try:
        return task_sampling.sampled_task(args.task, values)
    except ValueError as exc:
        raise UsageError(task_message(args.task, exc, values)) from None


def task_message(task, exc, given=()) -> str:
    """``--task TASK: reason`` of a task refused, naming the task once (a task file's message
    starts with its path) and where each value it refuses comes from.

    A reason about parameter values (``n must be``, ``multiplicity of group 'u' = n/n_c is``,
    ``M = 100000, R = 1 gives``, ``cannot be sampled at m = 5, n = 10000000``) is preceded by each of them
    that ``--params`` gives (``--params n``) or the task file sets (its key, as ``print_dynamics`` names it:
    ``defaults.n``; :func:`derivations.engine.task_file.default_key`), in the order named; not by those in
    a list of names (``its parameters: M, b``), nor, for ``--params``, by the parameter whose own check the
    reason is (``n must be``).

    Parameters
    ----------
    task : str
        What ``--task`` named.
    exc : Exception or str
    given : iterable of str, optional
        The parameters ``--params`` gives.

    Returns
    -------
    str
    """
    text = str(exc)
    return f"--task {task}: " + attributed(task, text[len(task) + 2:] if text.startswith(f"{task}: ") else text, given)


def attributed(task, text, given=()) -> str:
    """``text`` preceded by where the values of the parameters it is about come from (``--params b: ...``,
    ``defaults.n: ...``; the rule of :func:`task_message`), or as it is when it is about none.

    Parameters
    ----------
    task : str
        What ``--task`` named.
    text : str or Exception
    given : iterable of str, optional
        The parameters ``--params`` gives.

    Returns
    -------
    str
    """
    text = str(text)
    keys = _sources(task, text, given)
    return (f"{', '.join(keys)}: " if keys else "") + text


#: A parameter whose value a message is about: ``n must be``, ``M = 4``, ``= n is`` (not a group's quoted name),
#: or a name in an expression (``n/n_c``, ``m / (s + m + n)``); not a list of names (``its parameters: M, b``).
_NAMED = re.compile(r"(?<![\w'.])([A-Za-z_]\w*)(?= must be\b| = | is\b|\s?[-+*/])|(?<=[-+*/(]\s)([A-Za-z_]\w*)"
                    r"|(?<=[-+*/(])([A-Za-z_]\w*)")


def _sources(task, text, given):
    """``["--params n", "defaults.b", ...]``: where the values of the parameters ``text`` is about come from,
    ``--params`` (``given``) or the task file ``task`` (its key); none for a message naming its key already."""
    from derivations.engine.task_file import default_key
    from derivations.tasks import get_task, is_task_file

    if text.startswith(("defaults.", "parameters.")):
        return []
    try:
        loaded = get_task(task) if is_task_file(task) else None
    except ValueError:
        loaded = None
    typed, keys = [], []
    # not 'qc-m', not a list of names, not an option's words (--lr-ov, --seq-len: a parameter may be named lr)
    about = re.sub(r"\(its parameters: [^)]*\)", "", re.sub(r"'[^']*'|--[A-Za-z][\w-]*", "''", text))
    for match in _NAMED.finditer(about):
        name = next(group for group in match.groups() if group)
        if name in given:
            if not text.startswith(f"{name} must be"):
                typed.append(name)
        elif loaded is not None and default_key(loaded, name) is not None:
            keys.append(default_key(loaded, name).rpartition(": ")[2])
    typed, keys = list(dict.fromkeys(typed)), list(dict.fromkeys(keys))
    return ([f"--params {', '.join(typed)}"] if typed else []) + keys


def task_label(settings, source=None) -> str:
    """A task as a human-readable header names it: its name, the file it was read from and its
    parameter values (``task query-copies-file (tasks/q.toml), M=4, b=2``), or the authors' task.

    Parameters
    ----------
    settings : dict
        With the ``task`` and ``task_params`` of :func:`~numerics.experiments.task_sampling.task_settings`
        (none for the authors' task): a built-in task's name or a task's canonical text (JSON).
    source : str, optional
        What ``--task`` named; a task file's path is shown.

    Returns
    -------
    str
    """
    import json

    from derivations.tasks import is_task_file

    if "task" not in settings:
        return "the authors' task"
    key = settings["task"]
    name = json.loads(key)["name"] if key.startswith("{") else key
    where = f" ({source})" if is_task_file(source) else ""
    values = ", ".join(f"{k}={v:g}" for k, v in settings.get("task_params", ()))
    return f"task {name}{where}" + (f", {values}" if values else "")


def seq_len_for(st, args) -> int:
    """``--seq-len``: the text given, else the task's own length.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    args : argparse.Namespace
        With ``seq_len`` (the text of ``--seq-len`` or None), ``task`` and ``params``.

    Returns
    -------
    int

    Raises
    ------
    derivations.core.cli.UsageError
        Not an integer >= 3, or none given for a task without a length of its own (the message names the
        values of its counts and where they come from, :func:`task_message`'s attribution).
    """
    if args.seq_len is not None:
        return parse_int("--seq-len", args.seq_len, 3)
    if st.own_seq_len is None:
        raise UsageError(f"--seq-len is required for task {st.name!r}: its total multiplicity is not an integer "
                         f"{_counted(st, args)}")
    return st.own_seq_len


def seq_len_name(st, args, seq_len) -> str:
    """How a message names the sequence length: ``--seq-len 64`` when given, else the task's own length
    and the values (and their ``--params`` or task-file keys) it comes from.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    args : argparse.Namespace
        With ``seq_len``, ``task`` and ``params``.
    seq_len : int

    Returns
    -------
    str
    """
    if args.seq_len is not None:
        return f"--seq-len {seq_len}"
    return (f"the sequence length {seq_len} of task {st.name!r} (no --seq-len: its total multiplicity + 2"
            f"{' ' + _counted(st, args) if st.engine_state else ''})")


def _counted(st, args) -> str:
    """``at M = 20, m = 0.3, n = 50, set by --params m, defaults.M, defaults.n``: the values a task's counts
    depend on and where they come from."""
    from derivations.tasks import get_task

    return "at " + set_by(args.task, task_sampling.count_values(get_task(args.task), st.params), param_values(args))


def set_by(task, values, given=()) -> str:
    """``M = 20, b = 1e-300, set by --params b, defaults.M``: the parameters' values ``values`` followed by where
    they come from, ``--params`` or the task file's keys (the attribution of :func:`task_message`).

    Parameters
    ----------
    task : str
        What ``--task`` named.
    values : str
        ``name = value, ...``.
    given : iterable of str, optional
        The parameters ``--params`` gives.

    Returns
    -------
    str
    """
    keys = _sources(task, values, given)
    return values + (f", set by {', '.join(keys)}" if keys else "")
