r"""The resumable result store: one atomic, self-describing JSON file per finished job, sealed by a digest.

:func:`job_key` names a job (SHA-256 of its canonical JSON); a
:class:`ResultStore` keeps ``{"format", "key", "job", "result", "digest"}`` per job in
``<directory>/<key>.json``, written atomically (temporary file, fsync,
rename) as soon as the job finishes; ``digest`` is :func:`digest` of its job
and result. A file that is damaged (truncated, unparsable, not a JSON object, of another
``format``, of this ``format`` but with neither a digest nor the job and result it seals,
holding another job's sealed record, a directory, a FIFO or a device in its place, larger
than :data:`MAX_BYTES`, or sealed but of a result that is not a dict or that the store's
``validate`` rejects) counts as missing: the job is recomputed and the file replaced. A
file of this ``format`` whose job and result, whatever their shape, do not match its digest
(its job edited, its digest removed included), or whose ``key`` is not its job's, was changed after it was
written (edited, or bit-flipped):
it is refused, never read nor replaced (:class:`EditedRecord`, naming the
file); so is, unread, a file larger than the store's ``max_bytes`` where it is
given, the most a result of its jobs takes (:class:`OversizedRecord`). Data
only (JSON, never pickle), read without blocking.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
from pathlib import Path
from typing import Any, Callable, Iterator

from derivations.core.atomic_file import atomic_write_text, read_bounded, temporary_name_length

__all__ = ["STORE_FORMAT", "MAX_BYTES", "ResultStore", "EditedRecord", "OversizedRecord", "job_key", "digest",
           "canonical_json", "probe_store_directory", "shown_path"]

#: Tag written into every stored file; a file without it (one of an earlier layout, without a digest,
#: included) is not read: it counts as missing, and its job is recomputed.
STORE_FORMAT = "qkov.experiments.runner.ResultStore/2"
#: Largest stored file read (bytes); a larger one counts as damaged and is recomputed.
MAX_BYTES = 1 << 30


def canonical_json(job: Any, allow_nan: bool = False) -> str:
    """The canonical JSON text of a job: what :func:`job_key` and :func:`digest` hash.

    Parameters
    ----------
    job : object
        JSON values.
    allow_nan : bool, optional
        Write a number that is not finite as JSON's ``NaN`` or ``Infinity`` (default: refuse it).

    Returns
    -------
    str
        Sorted keys, no spaces, ASCII.

    Raises
    ------
    TypeError, ValueError
        A value JSON has not, or (without ``allow_nan``) a number that is not finite.
    """
    return json.dumps(job, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=allow_nan)


def digest(value: Any) -> str:
    """SHA-256 of the canonical JSON text of ``value`` (as :func:`job_key`'s, a number that is not
    finite written as JSON's ``NaN`` or ``Infinity``): what a file stored says it holds.

    Parameters
    ----------
    value : object
        JSON values (as read back from a file: string keys).

    Returns
    -------
    str
        64 lowercase hexadecimal digits.

    Raises
    ------
    ValueError
        If ``value`` is not JSON-serialisable.

    Examples
    --------
    >>> from numerics.experiments.store import digest
    >>> digest({"b": [1.5], "a": None}) == digest({"a": None, "b": [1.5]}) != digest({"a": None, "b": [1.25]})
    True
    """
    try:
        text = canonical_json(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"value is not JSON-serialisable: {exc}") from None
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def shown_path(path) -> str:
    """A path as the one-line messages print it: as it is, or quoted (``repr``) where it holds a character
    that is not printable (a line break, a control character), which would break the line.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    str

    >>> shown_path("out/runs")
    'out/runs'
    >>> print(shown_path("out" + chr(10) + "x/runs"))
    'out\\nx/runs'
    """
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    return text if text.isprintable() else repr(text)


class EditedRecord(ValueError):
    """A stored file of a job whose job and result do not match its digest: changed after it was written."""


class OversizedRecord(EditedRecord):
    """A stored file larger than a result of its store's jobs takes (``max_bytes``): not written by the
    store as it is (forged, or grown), refused unread, as an edited one is."""


def job_key(job: dict) -> str:
    """Stable name of a job: SHA-256 of its canonical JSON.

    The canonical form is ``json.dumps(job, sort_keys=True, separators=(",", ":"),
    ensure_ascii=True, allow_nan=False)``, so the key does not depend on key
    order, the Python session or the machine.  Tuples hash like lists; ``1``
    and ``1.0`` are different jobs.

    Parameters
    ----------
    job : dict
        JSON-serialisable job description (finite numbers only).

    Returns
    -------
    str
        64 lowercase hexadecimal digits.

    Raises
    ------
    ValueError
        If ``job`` is not a dict or not JSON-serialisable.

    Examples
    --------
    >>> from numerics.experiments.store import job_key
    >>> job_key({"seed": 1234, "lr": 0.01}) == job_key({"lr": 0.01, "seed": 1234})
    True
    >>> job_key({"seed": 1234, "lr": 0.01})[:16]
    '83165306dbbb6f09'
    """
    if not isinstance(job, dict):
        raise ValueError(f"job must be a dict of JSON values, got {type(job).__name__}")
    try:
        text = canonical_json(job)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"job must be a dict of finite JSON values (str keys, numbers, str, bool, "
                         f"None, lists, dicts): {exc}") from None
    return hashlib.sha256(text.encode("ascii")).hexdigest()



def _temporary_prefix(key: str) -> str:
    """The name prefix of the temporary file :meth:`ResultStore.put` writes the file of ``key`` in: named after
    the key, this host and this process, so that a store removes only its killed writers' files."""
    return f".{key[:16]}~{socket.gethostname()}~{os.getpid()}~"


def _name_length() -> int:
    """The length in bytes of the longest name a :class:`ResultStore` of this process writes in its directory:
    a stored file's, ``<key>.json``, or its temporary file's (:func:`_temporary_prefix`, then the random part and
    suffix that :func:`~derivations.core.atomic_file.atomic_write` adds to the prefix ``.<name>.`` of a name)."""
    key = "0" * 64
    tail = temporary_name_length(key) - len(f".{key}.")
    return max(len(f"{key}.json"), len(os.fsencode(_temporary_prefix(key))) + tail)


def probe_store_directory(directory, name: str = "--output") -> None:
    """Prove, before any work, that a :class:`ResultStore` in ``directory`` can write its files, with a real file
    named as long as its longest (:func:`derivations.core.output.prepare_output_dir`): in ``directory`` where it
    exists, else (a store makes it when opened) in its parent, with a name as long as ``<folder>/<that name>``,
    so that nothing is created and the system's limit on a path's length is met.

    Parameters
    ----------
    directory : str or os.PathLike
    name : str, optional
        The option that named the place, for the message (default ``"--output"``).

    Raises
    ------
    ValueError
        The store's files cannot be written there (the option, the place and the reason named).
    """
    from derivations.core.output import prepare_output_dir

    directory = Path(directory)
    if os.path.lexists(directory):
        prepare_output_dir(directory, name=name, longest_name=_name_length())
    else:
        prepare_output_dir(directory.parent, name=name,
                           longest_name=len(os.fsencode(directory.name)) + 1 + _name_length())


def _free_name(path: Path) -> Path:
    """``path``, or ``path.1``, ``path.2``, ... : the first that does not exist."""
    candidate, n = path, 0
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


class ResultStore:
    """A directory of finished jobs: one atomic JSON file per job, for resumable runs.

    Each file ``<directory>/<job_key(job)>.json`` holds
    ``{"format": STORE_FORMAT, "key": ..., "job": ..., "result": ..., "digest": ...}``
    (``digest``: :func:`digest` of ``{"job": ..., "result": ...}``), so a
    file describes itself (which job, which result) and can be read without
    qkov.  Files are written to a temporary file in the same directory, flushed
    and fsynced, then renamed over the final name (:func:`os.replace`), so a
    reader sees either the old file, the new one, or none, never half a file.
    A file that does not parse, is not a record of this format (a digest, or the job and result
    it seals) or holds another job's sealed record than its name says is treated as missing;
    one whose job and result, whatever their shape, do not match its digest, or whose key is not
    its job's (changed after it was written, its job included) is refused:
    reading it raises :class:`EditedRecord`, naming the file, and it is never
    replaced (a damaged file is lost work, recomputed to the same result; an
    edited one may be someone's work, or a sign of a failing disk, and is
    left for a person to move away).  Temporary files left by a writer
    killed mid-write (named after its host and process id) are deleted when a
    store is next opened on the same host.

    The key depends on the job only, not on the function that ran it: give a
    store to one job function, or put what distinguishes the functions into
    the jobs (e.g. ``{"experiment": "sweep", ...}``).

    Parameters
    ----------
    directory : str or os.PathLike
        Where the files live; created (with parents) if missing.
    validate : callable, optional
        ``validate(job, result) -> bool``: whether a stored result body is
        whole (every key, the right lengths and types). A result it rejects
        counts as missing, like a damaged envelope (default: any dict).
    read_only : bool, optional
        Only read: the directory is neither created nor cleaned of temporary
        files (a missing one holds nothing), and :meth:`put` is refused.
    max_bytes : int, optional
        The most bytes a file of a job of this store takes: a larger one is refused before a byte of
        it is read (:class:`OversizedRecord`). Without it, a file larger than :data:`MAX_BYTES`
        counts as damaged.

    Raises
    ------
    ValueError
        If ``directory`` (or one of its parents) exists and is not a directory.
    EditedRecord
        From :meth:`get`, :meth:`items` (``in``, ``len``), :meth:`put`: a file changed after it was
        written, or (:class:`OversizedRecord`) larger than ``max_bytes``.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.store import ResultStore
    >>> store = ResultStore(tempfile.mkdtemp())
    >>> job = {"seed": 1234}
    >>> store.get(job) is None
    True
    >>> store.put(job, {"loss": 0.125})
    >>> store.get(job), job in store, len(store)
    ({'loss': 0.125}, True, 1)
    """

    def __init__(self, directory, validate: Callable[[dict, dict], bool] | None = None, *,
                 read_only: bool = False, max_bytes: int | None = None):
        self.validate, self.read_only, self.max_bytes = validate, read_only, max_bytes
        path = Path(directory)
        if read_only:
            self.directory = path
            return
        try:
            path.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise ValueError(f"store directory {str(path)!r} is not a directory (a file is in the way)") from None
        if not path.is_dir():
            raise ValueError(f"store directory {str(path)!r} is not a directory")
        self.directory = path
        self._remove_stale_temporaries()

    def _remove_stale_temporaries(self) -> None:
        """Delete temporary files left by writers on this host that no longer run (killed mid-write)."""
        host = socket.gethostname()
        for tmp in self.directory.glob(".*~*~*~*.tmp"):
            parts = tmp.name.split("~")
            if len(parts) != 4 or parts[1] != host or not parts[2].isdigit():
                continue
            try:
                os.kill(int(parts[2]), 0)
                continue                      # its writer still runs
            except ProcessLookupError:
                pass
            except OSError:                   # exists but not ours to signal: leave it
                continue
            with contextlib.suppress(OSError):
                tmp.unlink()

    def __repr__(self) -> str:
        return f"ResultStore({str(self.directory)!r})"

    def path(self, job: dict) -> Path:
        """File that holds (or will hold) ``job``'s result.

        Parameters
        ----------
        job : dict

        Returns
        -------
        pathlib.Path
        """
        return self.directory / f"{job_key(job)}.json"

    def _read(self, path: Path, key: str | None = None):
        if self.max_bytes is not None:
            self._refuse_larger(path)
        try:
            record = json.loads(read_bounded(path, MAX_BYTES if self.max_bytes is None else self.max_bytes
                                             ).decode("utf-8"))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            return None
        if (not isinstance(record, dict) or record.get("format") != STORE_FORMAT
                or not ("digest" in record or {"job", "result"} <= record.keys())):
            return None                     # not a sealed record: damaged, or of another layout
        try:
            sealed = record.get("digest") == digest({"job": record.get("job"), "result": record.get("result")})
        except ValueError:
            return None
        if not sealed:
            raise EditedRecord(f"{shown_path(path)} was changed after it was written (its job and result do not "
                               f"match the digest stored with them); it is neither read nor replaced: move it away "
                               f"to run its job again")
        try:
            actual = job_key(record.get("job"))
        except ValueError:
            return None                     # a sealed record of no job: not one the store writes
        if actual != (key if key is not None else path.stem):
            return None                     # a whole record of another job: misplaced, not edited
        if record.get("key") != actual:
            raise EditedRecord(f"{shown_path(path)} was changed after it was written (the key stored in it is not "
                               f"its job's); it is neither read nor replaced: move it away to run its job again")
        if not isinstance(record.get("result"), dict):
            return None                     # a sealed record of no result the store writes
        if self.validate is not None and not self.validate(record["job"], record["result"]):
            return None
        return record

    def _refuse_larger(self, path: Path) -> None:
        """Raise :class:`OversizedRecord` for a regular file at ``path`` larger than ``max_bytes``."""
        try:
            info = os.stat(path)
        except OSError:
            return
        if stat.S_ISREG(info.st_mode) and info.st_size > self.max_bytes:
            raise OversizedRecord(f"{shown_path(path)} is {info.st_size} bytes, more than a result stored there "
                                  f"takes ({self.max_bytes} bytes); it is neither read nor replaced: move it away")

    def get(self, job: dict, default=None):
        """The stored result of ``job``, or ``default`` if it is missing or damaged.

        Parameters
        ----------
        job : dict
        default : object, optional

        Returns
        -------
        dict or ``default``

        Raises
        ------
        EditedRecord
            The file of ``job`` was changed after it was written.
        """
        record = self._read(self.path(job), job_key(job))
        return default if record is None else record["result"]

    def __contains__(self, job: dict) -> bool:
        return self.get(job) is not None

    def put(self, job: dict, result: dict) -> None:
        """Save ``result`` for ``job`` atomically (temporary file, fsync, rename).

        Parameters
        ----------
        job : dict
        result : dict

        Raises
        ------
        ValueError
            If ``job`` or ``result`` is not JSON-serialisable.
        EditedRecord
            The file of ``job`` was changed after it was written: it is not replaced.
        """
        if self.read_only:
            raise ValueError(f"{self!r} is read only")
        key = job_key(job)
        if not isinstance(result, dict):
            raise ValueError(f"result must be a dict, got {type(result).__name__}")
        try:       # the job and the result as read back (string keys, lists), and their digest
            record = json.loads(json.dumps({"job": json.loads(canonical_json(job)), "result": result}))
            text = json.dumps({"format": STORE_FORMAT, "key": key, **record, "digest": digest(record)},
                              indent=1, sort_keys=True)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"result is not JSON-serialisable: {exc}") from None
        path = self.directory / f"{key}.json"
        if os.path.lexists(path):
            self._read(path, key)       # (raises for an edited file)
        if path.is_dir():     # a directory named like the file: not a result; kept aside, nothing deleted
            os.replace(path, _free_name(path.with_name(path.name + ".not-a-result")))
        atomic_write_text(path, text, fsync=True, encoding="utf-8", prefix=_temporary_prefix(key))

    def items(self) -> Iterator[tuple[dict, dict]]:
        """``(job, result)`` for every intact file, in file-name order.

        Yields
        ------
        tuple of dict
            A job and its result.

        Raises
        ------
        EditedRecord
            A file was changed after it was written.
        """
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("*.json")):
            if not path.is_file():
                continue
            record = self._read(path)
            if record is not None:
                yield record["job"], record["result"]

    def __len__(self) -> int:
        return sum(1 for _ in self.items())

