r"""An experiment's recorded settings: checked, compared with a command line's, continued.

A sweep records its settings (:data:`~numerics.experiments.directory.SETTINGS_FILE`);
:func:`check_sweep_settings` says what is wrong with stored ones in the file's
terms, :func:`check_run_settings` of a ``fig2.json`` or ``fig3.json``, :func:`report_settings`
reads a reproduction's from its ``report.json``; :func:`settings_difference` names the first setting a ``--resume`` (or
``--resume --extend``) would change, as its option; :func:`continued_settings`
gives the settings that continue a stored sweep. Settings compare by value:
the task parameters with the task's defaults filled in (``--params m=5`` is the
default ``m``), a setting recorded only when it is not its default (``dtype``)
as that default when absent.
"""
from __future__ import annotations

import json
import math

from derivations.core.vocabulary import PARAMETERIZATIONS

__all__ = ["EXTENDABLE", "OPTIONAL", "check_sweep_settings", "check_run_settings", "report_settings",
           "unmatched_setting", "settings_difference", "continued_settings", "different_setting", "shown",
           "shown_option", "whole_number", "finite_number", "comparable"]

#: Settings that ``--extend`` may change (others must equal the stored ones).
EXTENDABLE = ("parameterizations", "ratios", "seeds")
#: Settings recorded only when they differ from these defaults (a float64 sweep does not name its dtype).
_UNNAMED_DEFAULTS = {"dtype": "float64"}


def shown(value, limit: int = 40) -> str:
    """A stored value as JSON text, cut to ``limit`` characters (a 300-digit number stays short).

    Parameters
    ----------
    value : object
    limit : int, optional

    Returns
    -------
    str

    >>> shown([[2]]), shown(10 ** 300)[-6:]
    ('[[2]]', '000...')
    """
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


#: Settings every sweep records (``seed_blocks``: the seeds' history).
_REQUIRED = ("parameterizations", "ratios", "seeds", "target_loss", "lr_ov", "seq_len", "batch_size",
             "steps_per_epoch", "max_steps", "init", "eval_batches", "seed_blocks")
#: Settings recorded only when they are not the defaults (a sweep's, a Figure-2 run's).
OPTIONAL = ("task", "task_params", "dtype")
#: Whole-number settings and their least value.
_WHOLE = {"seeds": 1, "seq_len": 3, "batch_size": 1, "steps_per_epoch": 1, "max_steps": 1, "eval_batches": 1}


def whole_number(v) -> bool:
    """Whether a stored value is a JSON whole number (an ``int``, not a bool).

    Parameters
    ----------
    v : object

    Returns
    -------
    bool
    """
    return isinstance(v, int) and not isinstance(v, bool)


def finite_number(v) -> bool:
    """Whether a stored value is a JSON number (not a bool) that is a finite float (an integer beyond
    floats is not).

    Parameters
    ----------
    v : object

    Returns
    -------
    bool
    """
    try:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    except OverflowError:
        return False


def _positive(v) -> bool:
    return finite_number(v) and v > 0


def _positives(v) -> bool:
    """A non-empty list of distinct numbers > 0."""
    return isinstance(v, list) and bool(v) and all(map(_positive, v)) and len(set(v)) == len(v)


def _task(v) -> bool:
    """A task's name, or its canonical text (a task file's) that reads back as a task."""
    if not isinstance(v, str):
        return False
    if not v.startswith("{"):
        return True
    from derivations.engine.task_file import task_from_text

    try:
        task_from_text(v)
    except (ValueError, TypeError):
        return False
    return True


def _pairs(v) -> bool:
    return (isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                        and finite_number(p[1]) for p in v)
            and len({p[0] for p in v}) == len(v))


def check_sweep_settings(settings: dict):
    """None when ``settings`` (read from :data:`~numerics.experiments.directory.SETTINGS_FILE`) are whole, else
    what is wrong, in the file's terms (its keys and JSON values, long values cut short).

    Parameters
    ----------
    settings : dict
        The stored settings, without the ``format`` tag.

    Returns
    -------
    str or None
        The first problem found.

    Examples
    --------
    >>> good = {"parameterizations": ["CACO"], "ratios": [1.0], "seeds": 2, "target_loss": 3.5, "lr_ov": 0.01,
    ...         "seq_len": 64, "batch_size": 32, "steps_per_epoch": 100, "max_steps": 100, "init": "authors",
    ...         "eval_batches": 50, "seed_blocks": [2]}
    >>> check_sweep_settings(good) is None
    True
    >>> check_sweep_settings({**good, "seed_blocks": [[2]]})
    '"seed_blocks" must be a list of whole numbers >= 1 adding up to "seeds" (2); got [[2]]'
    """
    for key in _REQUIRED:
        if key not in settings:
            return f'"{key}" is missing'
    for key in settings:
        if key not in _REQUIRED + OPTIONAL:
            return f'{shown(key)} is not a setting of a sweep'
    p = settings["parameterizations"]
    if (not isinstance(p, list) or not p or not all(isinstance(x, str) and x in PARAMETERIZATIONS for x in p)
            or len(set(p)) != len(p)):
        return (f'"parameterizations" must be a non-empty list of {", ".join(PARAMETERIZATIONS)}, each once; '
                f'got {shown(p)}')
    checks = [("ratios", _positives, "a non-empty list of distinct numbers > 0"),
              ("target_loss", lambda v: _positive(v) or _positives(v), "a number > 0 or a list of distinct ones"),
              ("lr_ov", _positive, "a number > 0"), ("init", lambda v: isinstance(v, str), "a name"),
              ("task", _task, "a task name or the stored text of a task"),
              ("task_params", _pairs, 'a list of ["name", number] pairs, each name once'),
              ("dtype", lambda v: v in ("float64", "float32"), '"float64" or "float32"')]
    for key, ok, what in checks:
        if key in settings and not ok(settings[key]):
            return f'"{key}" must be {what}; got {shown(settings[key])}'
    for key, least in _WHOLE.items():
        if not (whole_number(settings[key]) and settings[key] >= least):
            return f'"{key}" must be a whole number >= {least}; got {shown(settings[key])}'
    blocks = settings["seed_blocks"]
    if not (isinstance(blocks, list) and all(whole_number(k) and k >= 1 for k in blocks)
            and sum(blocks) == settings["seeds"]):
        return (f'"seed_blocks" must be a list of whole numbers >= 1 adding up to "seeds" '
                f'({shown(settings["seeds"])}); got {shown(blocks)}')
    return None


def check_run_settings(kind: str, settings):
    """None when the ``settings`` of a ``fig2.json`` or ``fig3.json`` are those of a run (the config
    they were written from, and a Figure-2 run's ``seeds``), else what is wrong, cut short.

    Settings with a key missing or unknown are left to the comparison with a command line's, which
    names that key.

    Parameters
    ----------
    kind : {"fig2", "fig3"}
    settings : object
        The ``settings`` read from the file.

    Returns
    -------
    str or None

    >>> check_run_settings("fig3", {"output_circuit": "collapsed", "alphas": ["x"], "epochs": 1,
    ...     "steps_per_epoch": 1, "batch_size": 4, "seq_len": 64, "lr": 0.01, "eval_batches": 1, "seed": 1})
    "its settings are not a run's: could not convert string to float: 'x'"
    """
    from dataclasses import fields

    from .fixed_attention import Fig3Config
    from .sgd import Fig2Config, check_seeds

    if not isinstance(settings, dict):
        return "without its settings"
    config_class = Fig2Config if kind == "fig2" else Fig3Config
    names = {f.name for f in fields(config_class)}
    config = {k: v for k, v in settings.items() if k != "seeds" or kind != "fig2"}
    foreign = next((k for k in config if k in OPTIONAL and k not in names), None)
    if foreign is not None:         # (named as the comparison names a key it does not know)
        return f"its settings have an unknown setting {shown(foreign)}"
    if set(config) - names or (kind == "fig2" and "seeds" not in settings) or names - set(config) - set(OPTIONAL):
        return None
    try:
        if kind == "fig2":
            check_seeds(settings["seeds"])
        written = config_class(**config).to_dict()
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        text = (str(exc).splitlines() or [type(exc).__name__])[0]
        return f"its settings are not a run's: {text if len(text) <= 80 else text[:77] + '...'}"
    key = next((k for k in dict.fromkeys([*config, *written])
                if comparable(config.get(k)) != comparable(written.get(k))), None)
    return None if key is None else f"its settings are not a run's: {shown(key)} is {shown(config.get(key))}"


def report_settings(report):
    """``{"quick", "dtype"}`` of a reproduction's ``report.json`` (``dtype`` only where a Figure-2 run
    finished), or None where it is not a reproduction's report.

    Parameters
    ----------
    report : object
        The file's JSON.

    Returns
    -------
    dict or None

    >>> report_settings({"quick": True, "runs": {"r": {"experiment": "fig2", "settings": {"dtype": "float32"}}}})
    {'quick': True, 'dtype': 'float32'}
    >>> report_settings({"quick": True, "runs": {"r": {"experiment": "fig2", "settings": {"dtype": [1]}}}})
    """
    from .sgd import DTYPES

    runs = report.get("runs") if isinstance(report, dict) else None
    if not (isinstance(runs, dict) and isinstance(report.get("quick"), bool)
            and all(isinstance(r, dict) and isinstance(r.get("settings"), dict)
                    and r["settings"].get("dtype", DTYPES[0]) in DTYPES for r in runs.values())):
        return None
    dtypes = [r["settings"].get("dtype", DTYPES[0]) for r in runs.values() if r.get("experiment") == "fig2"]
    return {"quick": report["quick"], **({"dtype": dtypes[0]} if dtypes else {})}


def comparable(value) -> str:
    """A value's canonical JSON text, for comparisons (``1`` and ``1.0`` differ, as in a job's key; a value
    JSON has not, by its repr).

    Parameters
    ----------
    value : object

    Returns
    -------
    str
    """
    return json.dumps(value, sort_keys=True, default=repr)


def _option(key) -> str:
    """The command-line option of a setting."""
    return "--params" if key == "task_params" else "--" + key.replace("_", "-")


def _text(v) -> str:
    """A number as on the command line (``%g`` for floats; a huge integer as ``1e+300``, one beyond
    floats as its first digits, ``1e+400...``)."""
    if isinstance(v, float) or (isinstance(v, int) and abs(v) >= 10 ** 15):
        try:
            return f"{v:g}" if isinstance(v, float) else f"{v:.3g}"
        except OverflowError:
            return f"{'-' if v < 0 else ''}{str(abs(v))[0]}e+{len(str(abs(v))) - 1}..."
    return str(v)


def _as_option(key, value) -> str:
    """A setting's value as it is written on the command line (``--params m=5,n=50``), cut short; a
    setting not recorded (None) as its default."""
    value = _UNNAMED_DEFAULTS.get(key) if value is None else value
    if key == "task" and value is None:
        text = "authors"
    elif key == "task" and isinstance(value, str) and value.startswith("{"):     # a task file's canonical text
        try:
            text = f"(the file of task {json.loads(value).get('name')!r})"
        except (ValueError, AttributeError):
            text = value
    elif key == "task_params":
        text = ",".join(f"{k}={_text(v)}" for k, v in value or ()) or "(none)"
    else:
        text = ",".join(map(_text, value)) if isinstance(value, list) else _text(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _task_values(task, params) -> dict:
    """Every parameter of ``task`` at ``params``, missing ones at the task's defaults."""
    from .task_sampling import canonical_params

    try:
        values = dict(canonical_params(params or ()))
    except (ValueError, TypeError):
        return params
    try:
        from derivations.engine import parameter_names
        from derivations.tasks import get_task

        spec = get_task(task)
        names = parameter_names(spec)
        defaults = dict(canonical_params([(k, v) for k, v in spec.defaults if k in names]))
    except (ValueError, TypeError, KeyError):
        return values
    return {**defaults, **values}


def _same(key, stored: dict, given: dict) -> bool:
    """Whether a setting is the same in both (task parameters by their values, defaults filled in)."""
    if key == "task_params" and stored.get(key) != given.get(key):
        return (stored.get("task") == given.get("task")
                and _task_values(given.get("task"), stored.get(key)) == _task_values(given.get("task"), given.get(key)))
    return stored.get(key) == given.get(key)


def unmatched_setting(stored: dict, given: dict):
    """The first setting that one of ``stored`` and ``given`` has and the other has not (those recorded
    only when given, :data:`OPTIONAL`, aside), or None: stored settings without it are damaged.

    Parameters
    ----------
    stored, given : dict
        Two settings (JSON values).

    Returns
    -------
    str or None
        The setting's name.

    >>> unmatched_setting({"lr_qk": 0.01, "task": "paper"}, {"lr_qk": 0.01, "seeds": [1]})
    'seeds'
    """
    return next((k for k in (*given, *stored) if (k in given) != (k in stored) and k not in OPTIONAL), None)


def shown_option(key: str, value) -> str:
    """A setting as it is written on the command line, its value cut short.

    Parameters
    ----------
    key : str
        The setting's name (``lr_qk``, ``task_params``, ...).
    value
        Its value (JSON).

    Returns
    -------
    str
        The option and its value.

    >>> shown_option("task_params", [["M", 4], ["m", 3]]), shown_option("lr_qk", 0.01), shown_option("seeds", 10**300)
    ('--params M=4,m=3', '--lr-qk 0.01', '--seeds 1e+300')
    >>> shown_option("quick", True), shown_option("quick", False)
    ('--quick', 'without --quick')
    """
    if isinstance(value, bool):         # a flag
        return _option(key) if value else f"without {_option(key)}"
    return f"{_option(key)} {_as_option(key, value)}"


def different_setting(stored: dict, given: dict):
    """The first setting (the task's and its parameters', which set defaults such as the sequence length,
    then ``given``'s in order, then ``stored``'s) whose values differ, or None.

    Parameters
    ----------
    stored, given : dict
        Two settings (JSON values).

    Returns
    -------
    str or None
        The setting's name.

    >>> different_setting({"task": "paper", "task_params": []}, {"task": "paper", "task_params": [["m", 5]]})
    >>> different_setting({"lr_qk": 0.01}, {"lr_qk": 0.02})
    'lr_qk'
    """
    stored, given = {**_UNNAMED_DEFAULTS, **stored}, {**_UNNAMED_DEFAULTS, **given}
    keys = dict.fromkeys(["task", "task_params", *given, *stored])
    return next((key for key in keys if not _same(key, stored, given)), None)


def settings_difference(stored: dict, given: dict, *, extend: bool = False, named=None):
    """None when ``given`` may continue the sweep of ``stored`` settings, else one line naming
    the first difference as its option (the task's and its parameters' first: they set defaults
    such as the sequence length). With ``extend``, ``given`` may add parameterizations,
    ratios or seeds (:data:`EXTENDABLE`) but not drop any. A setting recorded only when it is
    not its default (``dtype``, ``task``, ``task_params``) compares as its default when absent;
    task parameters compare by value (``--params m=5`` equals the default ``m``).

    Parameters
    ----------
    stored : dict
        The stored sweep's settings.
    given : dict
        The command line's.
    extend : bool, optional
        ``--extend``: ``given`` may add parameterizations, ratios or seeds.
    named : dict, optional
        ``{key: callable}``: ``named[key](values)`` names the command line's value of ``key`` and where it
        comes from (a task's own sequence length, a task file's default), in place of its option's value;
        ``values`` is that value as text; for ``task_params``, the default values of the parameters that
        ``given`` leaves at their defaults and ``stored`` sets otherwise (``n = 20``), the text then named
        after the parameters given. Called only for the difference named.

    Returns
    -------
    str or None
        The line naming the first difference.

    Examples
    --------
    >>> settings_difference({"ratios": [1.0], "seeds": 1}, {"ratios": [1.0, 4.0], "seeds": 1})[:60]
    'the sweep in this directory was run with --ratios 1, not 1,4'
    """
    stored, given = {**_UNNAMED_DEFAULTS, **stored}, {**_UNNAMED_DEFAULTS, **given}
    for key in dict.fromkeys(["task", "task_params", *given]):     # the task first: it sets defaults such as seq_len
        if key == "seed_blocks" or _same(key, stored, given):
            continue
        option = _option(key)
        if extend and key in ("parameterizations", "ratios"):
            missing = [v for v in stored.get(key, []) if v not in given[key]]
            if not missing:
                continue
            return (f"--extend keeps every stored row, but {option} {_as_option(key, given[key])} leaves out "
                    f"{_as_option(key, missing)} of the stored sweep; give them too")
        if extend and key == "seeds" and isinstance(stored.get(key), int) and given[key] >= stored[key]:
            continue
        if key == "task" and all(isinstance(v, str) and v.startswith("{") for v in (stored.get(key), given.get(key))):
            return (f"--task: the task file differs from the stored text of task "
                    f"{json.loads(stored[key]).get('name')!r}, which the stored runs used; a changed task file "
                    "is not resumed (give another --output)")
        hint = "; pass --extend to add parameterizations, ratios or seeds" if key in EXTENDABLE and not extend else ""
        ours = _as_option(key, given.get(key))
        values = _defaulted_values(given.get("task"), stored.get(key), given.get(key)) if key == "task_params" else ours
        if key in (named or {}) and values:
            ours = f"{ours} ({named[key](values)})" if key == "task_params" and given.get(key) else named[key](values)
        return (f"the sweep in this directory was run with {option} {_as_option(key, stored.get(key))}, not "
                f"{ours} (--resume continues it with its own settings{hint})")
    return None


def _defaulted_values(task, stored, given) -> str:
    """``m = 5, n = 20``: the default values of the task's parameters that ``given`` leaves at their defaults
    and ``stored`` sets otherwise."""
    from derivations.core.output import shown_float

    ours, theirs = _task_values(task, given), _task_values(task, stored)
    if not (isinstance(ours, dict) and isinstance(theirs, dict)):
        return ""
    typed = {p[0] for p in given or () if isinstance(p, list) and p}
    return ", ".join(f"{k} = {shown_float(v)}" for k, v in ours.items() if k not in typed and theirs.get(k) != v)


def continued_settings(stored: dict, given: dict) -> dict:
    """The settings that continue the sweep of ``stored`` with ``given`` (no difference between
    them but what ``--extend`` may add: :func:`settings_difference`): ``given``'s keys in its order,
    with the stored values;
    ``given``'s new parameterizations, ratios and seeds after the stored ones; the seeds'
    history in ``seed_blocks`` (a new block where seeds are added; it is recorded, and does
    not change the jobs).

    Parameters
    ----------
    stored : dict
        The stored sweep's settings (checked: :func:`check_sweep_settings`).
    given : dict
        The command line's (no difference but what ``--extend`` adds: :func:`settings_difference`).

    Returns
    -------
    dict
        The settings to run and record.
    """
    out = {key: stored.get(key, value) for key, value in given.items() if key != "seed_blocks"}
    for key in ("parameterizations", "ratios"):
        out[key] = list(stored[key]) + [v for v in given[key] if v not in stored[key]]
    blocks = list(stored["seed_blocks"])
    if given["seeds"] > stored["seeds"]:
        blocks.append(given["seeds"] - stored["seeds"])
    out["seeds"] = max(given["seeds"], stored["seeds"])
    out["seed_blocks"] = blocks
    return out
