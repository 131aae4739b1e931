r"""The output directory of an experiment: its kind, its lock, its settings and what it holds.

An :class:`ExperimentDirectory` is the one way the ``sweep``, ``reproduce`` and
``fig2`` commands use an output directory. Opening one checks everything
before any work and refuses, with :class:`DirectoryRefused` (one line), a
directory it cannot use, changing nothing in it:

* **Lock.** ``.lock`` is opened without following links (``O_NOFOLLOW``,
  created with ``O_EXCL``) and held with ``fcntl.flock`` while the directory
  is open (the kernel releases it however the process ends); a ``.lock`` that
  is not a regular file, or is held, is refused.
* **Kind.** A directory holds one kind of experiment (:data:`KINDS`), known by
  its files, or by the ``experiment`` of its stored runs; another is refused.
* **Settings.** A sweep records them in :data:`SETTINGS_FILE` before any work,
  a Figure-2 run in its ``fig2.json``; :meth:`ExperimentDirectory.settings`
  reads them checked (:func:`check_sweep_settings`). Stored runs of unknown
  settings (a damaged sweep, or one of an earlier layout, which is not read)
  are refused; no stored result is ever removed.
* **Files.** :meth:`ExperimentDirectory.begin` records the process id in the
  lock file and removes the temporary files (``.*.tmp``) of killed writes;
  files are written atomically; the stored runs are a
  :class:`~numerics.experiments.store.ResultStore` in ``runs/``.
"""
from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

from derivations.core.atomic_file import atomic_write_text
from derivations.core.cli import UsageError
from derivations.core.vocabulary import PARAMETERIZATIONS

__all__ = ["ExperimentDirectory", "DirectoryRefused", "KINDS", "LOCK_FILE", "SETTINGS_FILE", "SETTINGS_FORMAT",
           "RUNS", "EXTENDABLE", "check_sweep_settings", "settings_difference", "continued_settings"]

#: The lock file of a directory.
LOCK_FILE = ".lock"
#: The file in a sweep directory that records the sweep's settings.
SETTINGS_FILE = "sweep-settings.json"
#: The tag of :data:`SETTINGS_FILE`; a file with another tag is of another layout.
SETTINGS_FORMAT = "qkov.experiments.sweep.settings/1"
#: The folder of the stored runs (sweeps and reproductions).
RUNS = "runs"
#: kind -> the files that say a directory holds an experiment of that kind.
KINDS = {"sweep": (SETTINGS_FILE, "results.csv", "sweep.json"), "reproduction": ("report.json", "report.md"),
         "fig2": ("fig2.json",)}
#: The kind of a stored run, by its job's ``experiment``.
_KIND_OF_JOB = {"sweep": "sweep", "fig2": "reproduction", "fig3": "reproduction"}
#: Settings that ``--extend`` may change (others must equal the stored ones).
EXTENDABLE = ("parameterizations", "ratios", "seeds")
#: Settings recorded only when they differ from these defaults (a float64 sweep does not name its dtype).
_UNNAMED_DEFAULTS = {"dtype": "float64"}
#: Largest settings file read (bytes); ``fig2.json`` holds every run's loss log.
_MAX_BYTES = {SETTINGS_FILE: 1 << 20, "fig2.json": 1 << 30}


class DirectoryRefused(UsageError, ValueError):
    """An output directory that cannot be used as asked (one line, exit status 2, nothing changed)."""


def _shown(value, limit: int = 40) -> str:
    """A stored value as JSON text, cut to ``limit`` characters (a 300-digit number stays short)."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class ExperimentDirectory:
    """An experiment's output directory, locked while open (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        An existing directory (``--output``, created and probed by the command).
    kind : str
        ``"sweep"``, ``"reproduction"`` or ``"fig2"`` (:data:`KINDS`).
    lock : bool, optional
        Hold the lock (default); ``False`` only reads (``reproduce --collect``,
        which may run while the work goes on).

    Raises
    ------
    DirectoryRefused
        If the lock file is not a regular file or is held, ``runs`` is not a
        directory, or the directory holds another kind of experiment.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.directory import ExperimentDirectory
    >>> with ExperimentDirectory(tempfile.mkdtemp(), "sweep") as d:
    ...     d.held_kind(), d.settings(), d.has_runs()
    (None, None, False)
    """

    def __init__(self, path, kind: str, *, lock: bool = True):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
        self.path, self.kind = Path(path), kind
        self._fd, self._created = None, False
        if lock:
            self._lock()
        try:
            self._check_entries()
        except BaseException:
            self.close(refused=True)
            raise

    def _refuse(self, text: str) -> DirectoryRefused:
        return DirectoryRefused(f"--output {str(self.path)!r} {text}")

    def _lock(self) -> None:
        """Open ``.lock`` without following a link and hold ``flock`` on it (refused if held)."""
        import errno
        import fcntl

        path = self.path / LOCK_FILE
        what = _entry_kind(path)
        if what not in (None, "a file"):
            raise self._refuse(f"has a {LOCK_FILE} that is {_entry_kind(path)}, not a lock file (links in an output "
                               f"directory are never followed); remove it or choose another directory")
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            self._fd = os.open(path, flags | (os.O_EXCL if what is None else 0), 0o644)
        except OSError as exc:
            reason = "is a link" if exc.errno in (errno.ELOOP, errno.EEXIST) else (exc.strerror or str(exc))
            raise self._refuse(f"cannot open its lock file {LOCK_FILE}: {reason}") from None
        self._created = what is None
        if not stat.S_ISREG(os.fstat(self._fd).st_mode):
            self.close(refused=True)
            raise self._refuse(f"has a {LOCK_FILE} that is not a regular file; remove it")
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.close(refused=False)
            raise self._refuse(f"is in use by another sweep, reproduction or fig2 run (its lock file "
                               f"{LOCK_FILE} is held); wait for it to end or choose another directory") from None

    def _check_entries(self) -> None:
        """Refuse a ``runs`` that is not a directory and a directory of another kind."""
        if self.kind != "fig2" and _entry_kind(self.path / RUNS) not in (None, "a directory", "a link to a directory"):
            raise self._refuse(f"has a {RUNS} that is {_entry_kind(self.path / RUNS)}, not the folder of "
                               f"stored runs; move it away or choose another directory")
        held = self.held_kind()
        if held is not None and held != self.kind:
            named = {"sweep": "a sweep", "reproduction": "a reproduction", "fig2": "a fig2 run"}
            marker = next((m for m in KINDS[held] if os.path.lexists(self.path / m)), f"{RUNS}/")
            raise self._refuse(f"holds {named[held]} ({marker}), not {named[self.kind]}; choose another directory")

    def held_kind(self):
        """The kind of experiment the directory holds by its files (:data:`KINDS`), or None."""
        for kind, markers in KINDS.items():
            if any(os.path.lexists(self.path / m) for m in markers):
                return kind
        for job in self.stored_jobs():
            return _KIND_OF_JOB.get(job.get("experiment"))
        return None

    def stored_jobs(self):
        """The jobs of the intact files in ``runs/``, read only (an iterator)."""
        from .store import ResultStore

        return (job for job, _ in ResultStore(self.path / RUNS, read_only=True).items())

    def has_runs(self) -> bool:
        """Whether ``runs/`` holds a file (intact or not)."""
        runs = self.path / RUNS
        return runs.is_dir() and any(runs.glob("*.json"))

    def _read_json(self, name: str):
        """The JSON of ``name`` in the directory (not following a link), None if absent; refused if unreadable."""
        path = self.path / name
        what = _entry_kind(path)
        if what is None:
            return None
        if what != "a file":
            raise self._refuse(f"has a {name} that is {_entry_kind(path)}; its settings cannot be read (links "
                               f"in an output directory are never followed); choose another directory")
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(_MAX_BYTES[name] + 1)
            if len(data) > _MAX_BYTES[name]:
                raise ValueError(f"larger than {_MAX_BYTES[name]} bytes")
            return json.loads(data.decode("utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0][:80] or type(exc).__name__
            raise self._refuse(f"has a {name} that cannot be read ({reason}); the stored results are kept: "
                               f"choose another directory") from None

    def settings(self):
        """The stored settings (checked), or None where none are stored.

        A sweep's come from :data:`SETTINGS_FILE` (without its ``format`` tag), a
        Figure-2 run's from ``fig2.json``; a reproduction records none.

        Raises
        ------
        DirectoryRefused
            The file cannot be read or is damaged, or a sweep's runs are stored
            without settings (a damaged sweep, or one of an earlier layout).
        """
        if self.kind == "reproduction":
            return None
        if self.kind == "fig2":
            data = self._read_json("fig2.json")
            found = data.get("settings") if isinstance(data, dict) else None
            if data is not None and not isinstance(found, dict):
                raise self._refuse("has a fig2.json without its settings; choose another directory")
            return found
        data = self._read_json(SETTINGS_FILE)
        if data is None:
            if any(os.path.lexists(self.path / m) for m in KINDS["sweep"]) or self.has_runs():
                raise self._refuse(f"holds stored runs or results of a sweep but no {SETTINGS_FILE} (a damaged "
                                   f"sweep, or one of an earlier layout, which is not read); its settings are "
                                   f"unknown, so it is not continued: choose another directory")
            return None
        if not isinstance(data, dict) or data.get("format") != SETTINGS_FORMAT:
            tag = data.get("format") if isinstance(data, dict) else None
            raise self._refuse(f"has a {SETTINGS_FILE} of another layout (format {_shown(tag)}, not "
                               f"{SETTINGS_FORMAT!r}), which is not read; choose another directory")
        found = {k: v for k, v in data.items() if k != "format"}
        problem = check_sweep_settings(found)
        if problem is not None:
            raise self._refuse(f"has a damaged {SETTINGS_FILE}: {problem}; choose another directory")
        return found

    def refuse_other_settings(self, settings: dict) -> None:
        """Refuse, naming the first difference as its option, to replace results of other settings
        than ``settings`` (a Figure-2 run's; results of the same settings may be written again)."""
        stored, given = self.settings(), json.loads(json.dumps(settings))
        for key in dict.fromkeys([*given, *(stored or ())]):
            if stored is not None and not _same(key, stored, given):
                raise self._refuse(f"holds a {self.kind} run of other settings ({_option(key)} "
                                   f"{_as_option(key, stored.get(key))}, not {_as_option(key, given.get(key))}), "
                                   f"which it would replace; choose another directory")

    def write_settings(self, settings: dict) -> None:
        """Record a sweep's ``settings`` in :data:`SETTINGS_FILE` (atomically); refused if it cannot be written."""
        text = json.dumps({"format": SETTINGS_FORMAT, **settings}, indent=1, allow_nan=False)
        if _entry_kind(self.path / SETTINGS_FILE) not in (None, "a file"):
            raise self._refuse(f"has a {SETTINGS_FILE} that is {_entry_kind(self.path / SETTINGS_FILE)}; "
                               f"the settings cannot be written: choose another directory")
        try:
            atomic_write_text(self.path / SETTINGS_FILE, text, fsync=True)
        except OSError as exc:
            raise self._refuse(f"cannot record the settings in {SETTINGS_FILE}: {exc.strerror or exc}") from None

    def begin(self) -> None:
        """Start the work: record this process in the lock file, remove leftover temporary files."""
        pid = f"{os.getpid()}\n".encode()
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, pid, 0)
        except OSError:
            pass
        for tmp in self.path.glob(".*.tmp"):
            if _entry_kind(tmp) == "a file":
                try:
                    tmp.unlink()
                except OSError:
                    pass

    def store(self, validate=None):
        """The :class:`~numerics.experiments.store.ResultStore` of the stored runs (``runs/``)."""
        from .store import ResultStore

        return ResultStore(self.path / RUNS, validate=validate)

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` to ``name`` in the directory atomically; returns its path."""
        path = self.path / name
        atomic_write_text(path, text)
        return path

    def close(self, refused: bool = False) -> None:
        """Release the lock (a lock file this object created for a refused open is removed)."""
        if self._fd is None:
            return
        if refused and self._created:
            try:
                os.unlink(self.path / LOCK_FILE)
            except OSError:
                pass
        os.close(self._fd)
        self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        return f"ExperimentDirectory({str(self.path)!r}, {self.kind!r})"


def _entry_kind(path: Path):
    """What ``path`` is, without following a link: None (absent), ``"a file"``, ``"a directory"``,
    ``"a link to a directory"``, ``"a dangling link"``, ``"a link"`` or ``"a special file"``."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return "a special file"
    if stat.S_ISLNK(mode):
        if not os.path.exists(path):
            return "a dangling link"
        return "a link to a directory" if os.path.isdir(path) else "a link"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a file" if stat.S_ISREG(mode) else "a special file"


# --------------------------------------------------------------------------- a sweep's settings

#: Settings every sweep records, and those recorded only when given (``seed_blocks``: the seeds' history).
_REQUIRED = ("parameterizations", "ratios", "seeds", "target_loss", "lr_ov", "seq_len", "batch_size",
             "steps_per_epoch", "max_steps", "init", "eval_batches")
_OPTIONAL = ("task", "task_params", "dtype", "seed_blocks")
#: Whole-number settings and their least value.
_WHOLE = {"seeds": 1, "seq_len": 3, "batch_size": 1, "steps_per_epoch": 1, "max_steps": 1, "eval_batches": 1}


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _positive(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _positives(v) -> bool:
    return isinstance(v, list) and bool(v) and all(map(_positive, v))


def _pairs(v) -> bool:
    return isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                       and isinstance(p[1], (int, float)) and not isinstance(p[1], bool)
                                       for p in v)


def check_sweep_settings(settings: dict):
    """None when ``settings`` (read from :data:`SETTINGS_FILE`) are whole, else what is wrong,
    in the file's terms (its keys and JSON values, long values cut short).

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
        if key not in _REQUIRED + _OPTIONAL:
            return f'{_shown(key)} is not a setting of a sweep'
    p = settings["parameterizations"]
    if not isinstance(p, list) or not p or not all(isinstance(x, str) and x in PARAMETERIZATIONS for x in p):
        return f'"parameterizations" must be a non-empty list of {", ".join(PARAMETERIZATIONS)}; got {_shown(p)}'
    checks = [("ratios", _positives, "a non-empty list of numbers > 0"),
              ("target_loss", lambda v: _positive(v) or _positives(v), "a number > 0 or a list of them"),
              ("lr_ov", _positive, "a number > 0"), ("init", lambda v: isinstance(v, str), "a name"),
              ("task", lambda v: isinstance(v, str), "a task name"),
              ("task_params", _pairs, 'a list of ["name", number] pairs'),
              ("dtype", lambda v: v in ("float64", "float32"), '"float64" or "float32"')]
    for key, ok, what in checks:
        if key in settings and not ok(settings[key]):
            return f'"{key}" must be {what}; got {_shown(settings[key])}'
    for key, least in _WHOLE.items():
        if not (_whole(settings[key]) and settings[key] >= least):
            return f'"{key}" must be a whole number >= {least}; got {_shown(settings[key])}'
    blocks = settings.get("seed_blocks", [settings["seeds"]])
    if not (isinstance(blocks, list) and all(_whole(k) and k >= 1 for k in blocks)
            and sum(blocks) == settings["seeds"]):
        return (f'"seed_blocks" must be a list of whole numbers >= 1 adding up to "seeds" '
                f'({_shown(settings["seeds"])}); got {_shown(blocks)}')
    return None


def _option(key) -> str:
    """The command-line option of a setting."""
    return "--params" if key == "task_params" else "--" + key.replace("_", "-")


def _text(v) -> str:
    """A number as on the command line (``%g`` for floats; a huge integer as ``1e+300``)."""
    if isinstance(v, float) or (isinstance(v, int) and abs(v) >= 10 ** 15):
        return f"{v:g}" if isinstance(v, float) else f"{v:.3g}"
    return str(v)


def _as_option(key, value) -> str:
    """A setting's value as it is written on the command line (``--params m=5,n=50``), cut short."""
    if key == "task" and value is None:
        text = "authors"
    elif key == "task_params":
        text = ",".join(f"{k}={_text(v)}" for k, v in value or ()) or "(none)"
    else:
        text = ",".join(map(_text, value)) if isinstance(value, list) else _text(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _task_values(task, params) -> dict:
    """Every parameter of ``task`` at ``params``, missing ones at the task's defaults."""
    from .task_sampling import canonical_params, task_parameter_names

    values = dict(canonical_params(params or ()))
    try:
        from derivations.tasks import get_task

        names = task_parameter_names(task)
        defaults = dict(canonical_params([(k, v) for k, v in get_task(task).defaults if k in names]))
    except (ValueError, TypeError, KeyError):
        return values
    return {**defaults, **values}


def _same(key, stored: dict, given: dict) -> bool:
    """Whether a setting is the same in both (task parameters by their values, defaults filled in)."""
    if key == "task_params" and stored.get(key) != given.get(key):
        return (stored.get("task") == given.get("task")
                and _task_values(given.get("task"), stored.get(key)) == _task_values(given.get("task"), given.get(key)))
    return stored.get(key) == given.get(key)


def settings_difference(stored: dict, given: dict, *, extend: bool = False):
    """None when ``given`` may continue the sweep of ``stored`` settings, else one line naming
    the first difference as its option. With ``extend``, ``given`` may add parameterizations,
    ratios or seeds (:data:`EXTENDABLE`) but not drop any. A setting recorded only when it is
    not its default (``dtype``, ``task``, ``task_params``) compares as its default when absent;
    task parameters compare by value (``--params m=5`` equals the default ``m``).

    Examples
    --------
    >>> settings_difference({"ratios": [1.0], "seeds": 1}, {"ratios": [1.0, 4.0], "seeds": 1})[:60]
    'the sweep in this directory was run with --ratios 1, not 1,4'
    """
    stored, given = {**_UNNAMED_DEFAULTS, **stored}, {**_UNNAMED_DEFAULTS, **given}
    for key in dict.fromkeys([*given, "task", "task_params"]):
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
        return (f"the sweep in this directory was run with {option} {_as_option(key, stored.get(key))}, not "
                f"{_as_option(key, given.get(key))} (--resume continues it with its own settings{hint})")
    return None


def continued_settings(stored: dict, given: dict) -> dict:
    """The settings that continue the sweep of ``stored`` with ``given`` (no difference between
    them but what ``--extend`` may add: :func:`settings_difference`): ``given``'s keys in its order,
    with the stored values;
    ``given``'s new parameterizations, ratios and seeds after the stored ones; the seeds'
    history in ``seed_blocks`` (a new block where seeds are added; it is recorded, and does
    not change the jobs)."""
    out = {key: stored.get(key, value) for key, value in given.items() if key != "seed_blocks"}
    for key in ("parameterizations", "ratios"):
        out[key] = list(stored[key]) + [v for v in given[key] if v not in stored[key]]
    blocks = list(stored.get("seed_blocks") or [stored["seeds"]])
    if given["seeds"] > stored["seeds"]:
        blocks.append(given["seeds"] - stored["seeds"])
    out["seeds"] = max(given["seeds"], stored["seeds"])
    out["seed_blocks"] = blocks
    return out
