r"""The output directory of an experiment: its kind, its lock, its settings and what it holds.

An :class:`ExperimentDirectory` is the one way the ``sweep``, ``reproduce`` and ``fig2`` commands use an
output directory. Opening one checks everything before any work and refuses, with
:class:`DirectoryRefused` (one line), a directory it cannot use, changing nothing in it:

* **Lock.** ``.lock`` is held while the directory is open (:class:`~numerics.experiments.lock.DirectoryLock`:
  never following a link, ``flock``); a ``.lock`` that is not a regular file of one name (a link), or is held
  (by another experiment or a ``predict`` on the directory), is refused.
* **Kind.** A directory holds one kind of experiment (:data:`KINDS`), known by its files (results and
  figures), or by the ``experiment`` of its stored runs; another is refused.
* **Settings.** A sweep records them, with their :func:`~numerics.experiments.store.digest`, in
  :data:`SETTINGS_FILE` before any work, a Figure-2 or Figure-3 run in its ``fig2.json`` or
  ``fig3.json``, a reproduction (``--quick``, ``--dtype``) in its ``report.json``
  (:data:`SETTINGS_FILES`), an unfinished one by its stored runs; :meth:`ExperimentDirectory.settings`
  reads them checked (:func:`check_sweep_settings`; a sweep's against their digest: a file changed
  after it was written is refused). Stored runs or results of unknown settings (a settings file lost,
  or a sweep of an earlier layout, which is not read) are refused; no stored result is ever removed or
  replaced by another settings' result.
* **Files.** Entering the directory (``with``) begins the work: :meth:`ExperimentDirectory.begin`
  records the process id in the lock file and removes the temporary files of its killed writes (not a
  user's ``.*.tmp``); files are written atomically; the stored runs are a
  :class:`~numerics.experiments.store.ResultStore` in ``runs/``, every one read when the directory is opened
  (one changed after it was written, or larger than :meth:`ExperimentDirectory.run_bytes`, is refused).
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from derivations.core.atomic_file import atomic_write_text, is_temporary, read_bounded
from derivations.core.cli import UsageError
from derivations.core.vocabulary import PARAMETERIZATIONS

from .entries import entry_kind
from .fixed_attention import OUTPUT_CIRCUITS
from .lock import DirectoryLock
from .settings import (check_run_settings, check_sweep_settings, different_setting, report_settings, shown,
                       shown_option, unmatched_setting)
from .store import MAX_BYTES, EditedRecord, ResultStore, digest, job_key, probe_store_directory

__all__ = ["ExperimentDirectory", "DirectoryRefused", "KINDS", "SETTINGS_FILE", "SETTINGS_FILES",
           "SETTINGS_FORMAT", "SETTINGS_MAX_BYTES", "RUNS", "REPORT_FIGURES"]

#: The file in a sweep directory that records the sweep's settings.
SETTINGS_FILE = "sweep-settings.json"
#: The tag of :data:`SETTINGS_FILE`; a file with another tag is of another layout.
SETTINGS_FORMAT = "qkov.experiments.sweep.settings/2"
#: The folder of the stored runs (sweeps and reproductions).
RUNS = "runs"


def _figures(*stems) -> tuple:
    """The figure files ``<stem>.png`` and ``<stem>.pdf`` of each stem."""
    return tuple(f"{stem}.{ext}" for stem in stems for ext in ("png", "pdf"))


#: kind -> the files that say a directory holds an experiment of that kind (its results and figures).
KINDS = {"sweep": (SETTINGS_FILE, "results.csv", "sweep.json", *_figures("sweep", "proxies")),
         "reproduction": ("report.json", "report.md"),
         "fig2": ("fig2.json", *_figures(*(f"fig2_{p}" for p in PARAMETERIZATIONS))),
         "fig3": ("fig3.json", *_figures(*(f"fig3_{c}" for c in OUTPUT_CIRCUITS)))}
#: kind -> the file that records its settings. A reproduction's runs are stored before its report:
#: runs without a ``report.json`` are an unfinished reproduction, continued.
SETTINGS_FILES = {"sweep": SETTINGS_FILE, "fig2": "fig2.json", "fig3": "fig3.json", "reproduction": "report.json"}
#: The kinds that store runs in :data:`RUNS`.
_STORING = ("sweep", "reproduction")
#: How a message names a kind's experiment.
_NAMED = {"sweep": "a sweep", "reproduction": "a reproduction", "fig2": "a fig2 run", "fig3": "a fig3 run"}
#: The kind of a stored run, by its job's ``experiment``.
_KIND_OF_JOB = {"sweep": "sweep", "fig2": "reproduction", "fig3": "reproduction"}
#: The figures a reproduction writes beside its report (:func:`numerics.experiments.reproduce.make_figures`).
REPORT_FIGURES = ("fig2_heatmaps", "fig3_fixed_attention")
#: The files written here: a killed write's temporary of one (``atomic_file.is_temporary``) is removed, a user's not.
_WRITTEN = frozenset({name for files in KINDS.values() for name in files} | set(_figures(*REPORT_FIGURES)))
#: Largest settings file read (bytes) where no tighter limit is given: ``fig2``, ``fig3`` and ``reproduce`` give
#: the size a result of their settings can have (:func:`~numerics.experiments.jobs.output_bytes`).
SETTINGS_MAX_BYTES = {SETTINGS_FILE: 1 << 20, "fig2.json": 1 << 30, "fig3.json": 1 << 30, "report.json": 1 << 30}


class DirectoryRefused(UsageError, ValueError):
    """An output directory that cannot be used as asked (one line, exit status 2, nothing changed)."""


class ExperimentDirectory:
    """An experiment's output directory, locked while open (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        An existing directory (``--output``, created and probed by the command).
    kind : str
        ``"sweep"``, ``"reproduction"``, ``"fig2"`` or ``"fig3"`` (:data:`KINDS`).
    lock : bool, optional
        Hold the lock (default); ``False`` only reads (``reproduce --collect``,
        which may run while the work goes on).
    run_bytes : callable, optional
        ``run_bytes() -> int``: the most bytes a stored run read without a sweep's settings takes, a
        reproduction's (:func:`numerics.experiments.reproduce.run_bytes`; the commands give it); without it,
        :data:`~numerics.experiments.store.MAX_BYTES` (:meth:`run_bytes`).

    Raises
    ------
    DirectoryRefused
        If the lock file is not a regular file or is held, ``runs`` is not a
        directory or (locked) cannot take files, (locked) a directory is where a file of the kind is
        written, the directory holds another kind of experiment, or a stored run was changed after it was
        written.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.directory import ExperimentDirectory
    >>> with ExperimentDirectory(tempfile.mkdtemp(), "sweep") as d:
    ...     d.held_kind(), d.settings(), d.has_runs()
    (None, None, False)
    """

    def __init__(self, path, kind: str, *, lock: bool = True, run_bytes=None):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
        self.path, self.kind, self._unsettled_bytes = Path(path), kind, run_bytes or (lambda: MAX_BYTES)
        self._held, self._run_bytes = None, None
        if lock:
            self._held = DirectoryLock(self.path, self._refuse, "another sweep, reproduction, fig2, fig3 or predict run")
        try:
            self._check_entries()
        except BaseException:
            self.close(refused=True)
            raise

    def _refuse(self, text: str) -> DirectoryRefused:
        return DirectoryRefused(f"--output {str(self.path)!r} {text}")

    def _check_entries(self) -> None:
        """Refuse a ``runs`` that is not a directory, a directory of another kind and, where the work is
        written (the lock held), a directory in the place of a file it writes or a ``runs`` that cannot
        take files."""
        runs = entry_kind(self.path / RUNS)
        if self.kind in _STORING and runs not in (None, "a directory", "a link to a directory"):
            raise self._refuse(f"has a {RUNS} that is {runs}, not the folder of "
                               f"stored runs; move it away or choose another directory")
        self._refuse_other_kind(self._marked_kind())      # by its files, before a run is read
        if self.kind in _STORING:
            list(self.stored_jobs())      # every file read: one changed after it was written is refused
        self._refuse_other_kind(self.held_kind())
        written = KINDS[self.kind] + (_figures(*REPORT_FIGURES) if self.kind == "reproduction" else ())
        in_the_way = next((m for m in written if entry_kind(self.path / m) == "a directory"), None)
        if self._held is not None and in_the_way is not None:
            raise self._refuse(f"has a {in_the_way} that is a directory, where {_NAMED[self.kind]} writes that "
                               f"file; move it away or choose another directory")
        if self._held is not None and self.kind in _STORING:
            try:            # the runs are written there (made as the work begins): proved to take their names
                probe_store_directory(self.path / RUNS)
            except ValueError as exc:
                raise DirectoryRefused(str(exc)) from None

    def _refuse_other_kind(self, held) -> None:
        if held is not None and held != self.kind:
            marker = next((m for m in KINDS[held] if os.path.lexists(self.path / m)), f"{RUNS}/")
            raise self._refuse(f"holds {_NAMED[held]} ({marker}), not {_NAMED[self.kind]}; choose another directory")

    def _marked_kind(self):
        """The kind of experiment the directory holds by its files (:data:`KINDS`), or None."""
        return next((kind for kind, marks in KINDS.items() if any(os.path.lexists(self.path / m) for m in marks)), None)

    def held_kind(self):
        """The kind of experiment the directory holds by its files (:data:`KINDS`), else by its first stored
        run, or None."""
        return self._marked_kind() or next((_KIND_OF_JOB.get(j.get("experiment")) for j in self.stored_jobs()), None)

    def run_bytes(self) -> int:
        """The most bytes a stored run of the directory takes: a sweep's by its settings, read (and checked)
        first (:func:`numerics.experiments.sweep.run_bytes`), else the ``run_bytes`` given (a reproduction's,
        the only runs stored without such settings)."""
        if self._run_bytes is None and self.kind == "sweep" and os.path.lexists(self.path / SETTINGS_FILE):
            from .sweep import run_bytes
            self._run_bytes = run_bytes(self.settings())
        elif self._run_bytes is None:
            self._run_bytes = self._unsettled_bytes()
        return self._run_bytes

    def stored_jobs(self):
        """The jobs of the intact files in ``runs/``, read only, one file at a time (an iterator).

        Raises
        ------
        DirectoryRefused
            A file there was changed after it was written or is larger than :meth:`run_bytes`, or damaged settings.
        """
        if not self.has_runs():
            return
        try:
            yield from (job for job, _ in self.store(read_only=True).items())
        except EditedRecord as exc:
            raise self._refuse(f"holds a stored run: {exc}") from None

    def has_runs(self) -> bool:
        """Whether ``runs/`` holds a file (intact or not)."""
        return (self.path / RUNS).is_dir() and any((self.path / RUNS).glob("*.json"))

    def read_json(self, name: str, limit: int = None):
        """The JSON of a settings file (:data:`SETTINGS_FILES`) in the directory, not following a link.

        Parameters
        ----------
        name : str
        limit : int, optional
            Its largest size (bytes) read; default :data:`SETTINGS_MAX_BYTES`.

        Returns
        -------
        object
            None if absent.

        Raises
        ------
        DirectoryRefused
            Not a file, or unreadable (larger than ``limit``, not JSON: the message names the reason).
        """
        path = self.path / name
        what = entry_kind(path)
        if what is None:
            return None
        if what != "a file":
            raise self._refuse(f"has a {name} that is {entry_kind(path)}; its settings cannot be read (links "
                               f"in an output directory are never followed); choose another directory")
        try:
            return json.loads(read_bounded(path, limit or SETTINGS_MAX_BYTES[name], follow_links=False).decode("utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0][:80] or type(exc).__name__
            raise self._refuse(f"has a {name} that cannot be read ({reason}); the stored results are kept: "
                               f"choose another directory") from None

    def settings(self, limit: int = None):
        """The stored settings (checked): a sweep's from :data:`SETTINGS_FILE` (less its ``format`` tag and
        ``digest``, which they must match), a Figure-2 or Figure-3 run's from the ``settings`` of its
        ``fig2.json`` or ``fig3.json``, a reproduction's (``quick`` and the ``dtype`` of its Figure-2 runs)
        from its ``report.json``.

        Parameters
        ----------
        limit : int, optional
            The largest file read (:meth:`read_json`).

        Returns
        -------
        dict or None
            None where none are stored.

        Raises
        ------
        DirectoryRefused
            The file cannot be read or is damaged, or runs or results are stored
            without it (a settings file lost, or a sweep of an earlier layout).
        """
        name = SETTINGS_FILES[self.kind]
        data = self.read_json(name, limit)
        if data is None and not os.path.lexists(self.path / name):
            self._refuse_unknown_settings(name)
            return None
        if self.kind == "reproduction":
            if (found := report_settings(data)) is None:
                raise self._refuse("has a damaged report.json (not a reproduction's report); the stored runs are "
                                   "kept: choose another directory")
            return found
        if self.kind != "sweep":
            found = data.get("settings") if isinstance(data, dict) else None
            if (problem := check_run_settings(self.kind, found)) is not None:
                raise self._refuse(f"has a damaged {name} ({problem}); choose another directory")
            return found
        if not isinstance(data, dict):
            raise self._refuse(f"has a damaged {SETTINGS_FILE} (not a JSON object); choose another directory")
        if data.get("format") != SETTINGS_FORMAT:
            raise self._refuse(f"has a {SETTINGS_FILE} of another layout (format {shown(data.get('format'))}, not "
                               f"{SETTINGS_FORMAT!r}), which is not read; choose another directory")
        found = {k: v for k, v in data.items() if k not in ("format", "digest")}
        problem = check_sweep_settings(found) or (None if data.get("digest") == digest(found) else
                                                  "its settings are not those it was written with (its digest)")
        if problem is not None:
            raise self._refuse(f"has a damaged {SETTINGS_FILE}: {problem}; choose another directory")
        return found

    def _refuse_unknown_settings(self, name: str) -> None:
        """Refuse a directory whose runs or results are stored without their settings file ``name``."""
        held = next((m for m in KINDS[self.kind] if os.path.lexists(self.path / m)), None)
        if held is None and self.kind == "sweep" and self.has_runs():
            held = f"{RUNS}/"
        if held is not None:
            what, why = (("stored runs or results", "a damaged sweep, or one of an earlier layout, which is not "
                          "read") if self.kind == "sweep" else ("results", "lost or moved"))
            raise self._refuse(f"holds {what} of {_NAMED[self.kind]} ({held}) but no {name} ({why}); its settings "
                               f"are unknown, so it is neither continued nor replaced: choose another directory")

    def refuse_other_settings(self, settings: dict, runs_of=None, limit: int = None) -> None:
        """Refuse, naming the first difference as its option, to replace results of other settings
        (results of the same settings may be written again).

        Parameters
        ----------
        settings : dict
            The settings of the run to write (a Figure-2 run's: its config and seeds; a
            reproduction's: ``quick`` and ``dtype``).
        runs_of : dict, optional
            ``{job_key(job): [settings, ...]}``, the settings of every experiment that runs a job (a
            reproduction's: :func:`~numerics.experiments.reproduce.settings_of_jobs`): where no settings
            are recorded yet, a stored run that only other settings run is refused too.
        limit : int, optional
            The largest settings file read (bytes; :meth:`read_json`): what one of these settings can be.

        Raises
        ------
        DirectoryRefused
            The directory holds a run of other settings (a reproduction's: its report, or before its
            report a stored run that only a reproduction of other settings runs), or damaged settings.
        """
        stored, given = self.settings(limit), json.loads(json.dumps(settings))
        what, then = f"a {self.kind} run of other settings", ", which it would replace; choose another directory"
        if stored is None and runs_of is not None:                # unfinished: the settings of its stored runs
            stored = self._settings_of_runs(given, runs_of)
            what = f"the stored runs of an unfinished {self.kind} of other settings"
            then = ": continue it with its settings or choose another directory"
        elif self.kind == "reproduction" and stored is not None:   # no dtype before a Figure-2 run finished
            given = {k: v for k, v in given.items() if k in stored}
        elif stored is not None and (key := unmatched_setting(stored, given)) is not None:
            raise self._refuse(f"has a damaged {SETTINGS_FILES[self.kind]} (its settings have "
                               f"{('an unknown setting', 'no')[key in given]} {shown(key)}); choose another directory")
        key = None if stored is None else different_setting(stored, given)
        if key is not None:
            raise self._refuse(f"holds {what} ({shown_option(key, stored.get(key))}, not "
                               f"{shown_option(key, given.get(key))}){then}")

    def _settings_of_runs(self, given: dict, runs_of: dict):
        """The settings of a stored run that only other settings than ``given`` run (``runs_of``:
        :meth:`refuse_other_settings`), or None (a run of no known settings is not read)."""
        for job in self.stored_jobs():
            found = runs_of.get(job_key(job), [])
            if found and given not in found:
                return found[0]
        return None

    def write_settings(self, settings: dict) -> None:
        """Record a sweep's settings in :data:`SETTINGS_FILE`, atomically.

        Parameters
        ----------
        settings : dict
            The settings to run (JSON values), ``seed_blocks`` included.

        Raises
        ------
        DirectoryRefused
            The file cannot be written (nothing is changed then).
        """
        text = json.dumps({"format": SETTINGS_FORMAT, **settings, "digest": digest(settings)}, indent=1,
                          allow_nan=False)
        if entry_kind(self.path / SETTINGS_FILE) not in (None, "a file"):
            raise self._refuse(f"has a {SETTINGS_FILE} that is {entry_kind(self.path / SETTINGS_FILE)}; "
                               f"the settings cannot be written: choose another directory")
        try:
            atomic_write_text(self.path / SETTINGS_FILE, text, fsync=True)
        except OSError as exc:
            raise self._refuse(f"cannot record the settings in {SETTINGS_FILE}: {exc.strerror or exc}") from None
        self._run_bytes = None           # (its runs' bound: of these settings)

    def begin(self) -> None:
        """Start the work: record this process in the lock file, remove killed writes' temporary files."""
        self._held.record_process()
        with self.writing():
            for tmp in self.path.glob(".*.tmp"):
                if is_temporary(tmp, _WRITTEN) and entry_kind(tmp) == "a file":
                    with contextlib.suppress(OSError):
                        tmp.unlink()

    @contextlib.contextmanager
    def writing(self):
        """Hold the directory's write lock (``flock`` on the directory; waits for it) while a report is read
        from the runs and written, and :meth:`begin` removes temporary files: ``reproduce --collect`` holds no
        :data:`~numerics.experiments.lock.LOCK_FILE`, and a reproduction beside it neither removes its temporary files nor has its
        final report replaced by the collect's of fewer runs."""
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            fd = None
        if fd is None:             # (none yet: nothing is written beside)
            yield self
            return
        try:
            with contextlib.suppress(OSError):          # a file system without locks: as without a collect
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield self
        finally:
            os.close(fd)

    def store(self, validate=None, read_only: bool = False):
        """The stored runs: the store in ``runs/`` (created if missing, unless ``read_only``), a file larger
        than :meth:`run_bytes` refused unread.

        Parameters
        ----------
        validate : callable, optional
            ``validate(job, result) -> bool`` (:class:`~numerics.experiments.store.ResultStore`).
        read_only : bool, optional

        Returns
        -------
        ResultStore
        """
        return ResultStore(self.path / RUNS, validate=validate, read_only=read_only, max_bytes=self.run_bytes())

    def write_text(self, name: str, text: str) -> Path:
        """Write a file of the directory atomically.

        Parameters
        ----------
        name, text : str
            The file's name in the directory, and its text.

        Returns
        -------
        pathlib.Path
            The file written.
        """
        atomic_write_text(self.path / name, text)
        return self.path / name

    def close(self, refused: bool = False) -> None:
        """Release the lock.

        Parameters
        ----------
        refused : bool, optional
            Refused before any work: a lock file this object created is removed (nothing in it changed).
        """
        if self._held is not None:
            self._held.release(refused)
            self._held = None

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        return f"ExperimentDirectory({str(self.path)!r}, {self.kind!r})"
