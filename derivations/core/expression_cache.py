"""The one expression cache: derived results stored as data, keyed on the source they come from.

:mod:`derivations.catalog` (the paper's results) and :mod:`derivations.task_catalog` (the task engine's)
are two :class:`ExpressionStore` s of this module: one file format, one reader and writer, one warning
when nothing is writable, one command line (``--rebuild``, ``--check``). A third,
:data:`derivations.catalog.PRINTED`, keeps the paper's results as ``print_dynamics`` prints them. A
command that shows a part of the results decodes only that part (:meth:`ExpressionStore.lazy`).

* **Data, never code.** The store module turns its results into JSON values (expressions as whitelisted
  ``srepr`` text, :func:`derivations.symbolic.srepr_reader.to_srepr`) and back
  (:func:`~derivations.symbolic.srepr_reader.from_srepr`, no ``eval``); a file that is not a regular file (a
  FIFO, a device), is larger than :data:`MAX_FILE_BYTES`, is not valid JSON, lacks an entry, has one too many
  or one of another shape than the store declares (:mod:`~derivations.core.json_shape`), or holds anything
  outside the whitelist is *damaged* and rebuilt; reading it never waits or reads more than the bound
  (:func:`~derivations.core.atomic_file.read_bounded`).
* **Keyed automatically** (:func:`source_key`): a SHA-256 over the source of every ``.py`` file of
  ``derivations/core``, ``symbolic``, ``engine`` and ``tasks`` and every built-in task file (``.toml``; sorted
  by path), the store's own module, the file format :data:`FORMAT` and the SymPy version. No list to keep by
  hand: editing any module or task file a derivation can depend on invalidates the cache.
* **Where.** Shipped data is read, never written, by a program that uses it: the file in the package
  (``derivations/_cache/<stem>.json``, read with :mod:`importlib.resources`), then the user cache
  ``<cache dir>/qkov/<stem>-<key>.json`` (:func:`cache_dir`). On a miss the results are derived and written
  atomically to the user cache only, so an installed package's directory is never changed; when the user
  cache is not writable (or there is none), one line on stderr says so (once per process). Only ``--rebuild``
  (:meth:`ExpressionStore.rebuild`) writes the shipped file, in a source checkout (:func:`derivations.core.version.source_checkout`) only.
* **Checked.** Each file keeps a SHA-256 digest of its results with its key: a file whose results were edited
  (even into well-formed ones) is stale, at load and for ``--check``. The digest catches damage and hand
  edits, not a forger, who can compute it too (only deriving again can tell a forged result; ``--rebuild``
  does); a forged file is still read only when it has the declared shape, and as data, never run: the
  expressions through :func:`~derivations.symbolic.srepr_reader.from_srepr`'s whitelist, and their numeric
  code is made only from expressions whose every symbol is an argument and every function a known one
  (:func:`numerics.functions.numeric`, the code generator's strict printers).

The file: ``{"digest": <digest>, "format": FORMAT, "key": <key>, "results": {name: value}}``
(:func:`results_digest`), sorted keys, one line per entry (byte-stable).

Plain Python at import, as the rest of :mod:`derivations.core`.

>>> from derivations.core.expression_cache import source_key, user_cache
>>> len(source_key())
64
>>> user_cache("derived", "abc").name
'derived-abc.json'
>>> results_digest({"a": 1}) == results_digest({"a": 1}) != results_digest({"a": 2})
True
"""
from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from .atomic_file import atomic_write_text, read_bounded
from .json_shape import matches
from .output import note
from .version import PACKAGE_DIR, source_checkout

__all__ = ["FORMAT", "MAX_FILE_BYTES", "SOURCE_PACKAGES", "source_files", "sympy_version", "source_key",
           "cache_dir", "user_cache", "results_digest", "save_first_writable", "LazyResults",
           "ExpressionStore"]

#: Version of the cache file format (part of the key).
FORMAT = 4
#: Largest cache file read (bytes; the shipped ones are below 2 MiB): a larger one is damaged.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: The subpackages of :mod:`derivations` whose source keys every cache.
SOURCE_PACKAGES = ("core", "symbolic", "engine", "tasks")


def source_files(*extra) -> list:
    """Every ``.py`` and ``.toml`` (built-in task) file of :data:`SOURCE_PACKAGES` (sorted by path), then ``extra``.

    Parameters
    ----------
    *extra : str or Path
        Further files, appended in the order given.

    Returns
    -------
    list of Path
    """
    files = sorted(p for package in SOURCE_PACKAGES for suffix in ("*.py", "*.toml")
                   for p in (PACKAGE_DIR / package).rglob(suffix))
    return files + [Path(p) for p in extra]


def sympy_version() -> str:
    """The installed SymPy's version, without importing SymPy: ``sympy.__version__`` when SymPy is already
    imported, else the one line of ``sympy/release.py`` (read as data within a bound, never run), where
    ``sympy.__version__`` and SymPy's packaging take it from; the distribution's metadata only where that file
    does not tell (importing ``importlib.metadata`` costs 50 ms and more of a cold start). All give one string."""
    version = getattr(sys.modules.get("sympy"), "__version__", None)
    if version is None:
        try:
            line = read_bounded(Path(importlib.util.find_spec("sympy").origin).with_name("release.py"), 1024)
            version = re.fullmatch(r'__version__ = "([0-9A-Za-z.+-]+)"\s*', line.decode()).group(1)
        except (ImportError, AttributeError, TypeError, OSError, ValueError):
            import importlib.metadata as md
            version = md.version("sympy")
    return version


def source_key(*extra) -> str:
    """SHA-256 over :func:`source_files` (path relative to the package and content), the
    file format and the SymPy version (:func:`sympy_version`).

    Parameters
    ----------
    *extra : str or Path
        Further files to key on (:func:`source_files`), inside the ``derivations`` package.

    Returns
    -------
    str
        The hexadecimal digest (64 characters).

    Raises
    ------
    ValueError
        If an ``extra`` file lies outside the ``derivations`` package.
    """
    h = hashlib.sha256()
    for path in source_files(*extra):
        h.update(str(Path(path).resolve().relative_to(PACKAGE_DIR)).encode() + b"\0")
        h.update(Path(path).read_bytes() + b"\0")
    h.update(f"format {FORMAT}; sympy {sympy_version()}".encode())
    return h.hexdigest()


def cache_dir():
    """The user's cache directory of qkov: ``$XDG_CACHE_HOME/qkov`` when that variable holds an absolute
    path (the XDG Base Directory rule: a relative one is ignored), else ``~/.cache/qkov``; None without
    either (no ``HOME``, and a user without a password entry): no user cache is then read or saved.

    >>> import os
    >>> os.environ["XDG_CACHE_HOME"] = "/tmp/xdg"
    >>> str(cache_dir())
    '/tmp/xdg/qkov'
    >>> del os.environ["XDG_CACHE_HOME"]
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    try:
        return (Path(base) if base and os.path.isabs(base) else Path.home() / ".cache") / "qkov"
    except RuntimeError:            # Path.home(): no HOME and no password entry
        return None


def user_cache(stem: str, key: str):
    """The user cache file ``<cache_dir()>/<stem>-<key>.json``, or None without a :func:`cache_dir`.

    Parameters
    ----------
    stem : str
        The store's file stem.
    key : str
        The cache key (:func:`source_key`).

    Returns
    -------
    Path or None
    """
    root = cache_dir()
    return None if root is None else root / f"{stem}-{key}.json"


def results_digest(results) -> str:
    """SHA-256 of the JSON value ``results`` (compact, sorted keys, ASCII): the digest a cache file keeps of its body.

    Parameters
    ----------
    results : dict
        A JSON value (the encoded results).

    Returns
    -------
    str
        The hexadecimal digest.
    """
    text = json.dumps(results, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def save_first_writable(paths, text: str) -> list:
    """Write ``text`` atomically to the first of ``paths`` that is writable.

    Parameters
    ----------
    paths : iterable of str, Path or None
        The candidate files, in order of preference (None: no user cache directory).
    text : str
        The content.

    Returns
    -------
    list of str
        The reasons the paths tried failed: empty when the text was saved, one
        entry per path when none was writable.
    """
    errors = []
    for path in paths:
        if path is None:
            errors.append("no user cache directory (set XDG_CACHE_HOME or HOME)")
            continue
        try:
            atomic_write_text(path, text)
            return []
        except OSError as exc:
            errors.append(f"{path}: {exc.strerror or exc}")
    return errors


#: What decoding a damaged cache entry raises.
_DAMAGED = (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError)


class LazyResults(Mapping):
    """The results of a store's fresh cache file, each decoded on first access
    (:meth:`ExpressionStore.lazy`).

    Parameters
    ----------
    store : ExpressionStore
        Decodes an entry; loads (and rebuilds) the whole file when one is damaged.
    entries : dict
        ``{name: JSON value}``: the file's encoded results.
    """

    def __init__(self, store, entries: dict):
        self._store, self._entries, self._decoded = store, entries, {}

    def __getitem__(self, name):
        if name not in self._decoded:
            entry = self._entries[name]            # KeyError for a name the cache does not have
            try:
                self._decoded[name] = self._store.decode({name: entry})[name]
            except _DAMAGED:                       # a damaged entry: load (and rebuild) everything
                self._decoded = self._entries = self._store.load()
        return self._decoded[name]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)


class ExpressionStore:
    """One cache of derived results (see the module docstring).

    Parameters
    ----------
    stem : str
        File stem: ``derivations/_cache/<stem>.json`` and the user cache name.
    owner : str or Path
        The store's module file (part of the key).
    derive : callable
        ``derive() -> results``: computes every result (``{name: result}``, of the type that ``decode`` returns).
    encode, decode : callable
        ``encode(results) -> {name: JSON value}`` and back; ``decode`` raises
        ``ValueError`` (or ``KeyError``/``TypeError``/``IndexError``) on damaged data.
    prog, what : str
        The command (``derivations.catalog``) and the cache's name in messages
        (``derivation cache``).
    shape : callable
        ``shape() ->`` the shape (:func:`derivations.core.json_shape.matches`) of the encoded
        results of a complete file: every name and the type of each entry.
    sources : sequence of str or Path, optional
        Further files outside :data:`SOURCE_PACKAGES` that the results depend on (also part of the key).

    The attributes ``shipped``, ``derive`` and :meth:`user_path` may be replaced
    (tests point them at temporary files).
    """

    def __init__(self, stem, owner, derive, encode, decode, *, prog, what, shape, sources=()):
        self.stem, self.owner, self.sources = stem, Path(owner), tuple(Path(p) for p in sources)
        self.shipped = importlib.resources.files("derivations").joinpath("_cache", f"{stem}.json")
        self.derive, self.encode, self.decode, self.shape = derive, encode, decode, shape
        self.prog, self.what = prog, what
        self.memo, self.warned = None, False

    def key(self) -> str:
        """The cache key (:func:`source_key` with the store's module and its ``sources``)."""
        return source_key(self.owner, *self.sources)

    def user_path(self, key: str):
        """The user cache file of ``key`` (:func:`user_cache`).

        Parameters
        ----------
        key : str

        Returns
        -------
        Path or None
        """
        return user_cache(self.stem, key)

    def text(self, key: str, results: dict) -> str:
        """The cache file's text for ``results`` under ``key``.

        Parameters
        ----------
        key : str
        results : dict
            ``{name: result}``, as ``derive`` returns them.

        Returns
        -------
        str
            The JSON text (sorted keys, one line per entry), with the results' digest.
        """
        body = self.encode(results)
        payload = {"digest": results_digest(body), "format": FORMAT, "key": key, "results": body}
        return json.dumps(payload, indent=1, sort_keys=True) + "\n"

    def write(self, path, key: str, results: dict) -> None:
        """Write ``results`` under ``key`` to ``path``, atomically.

        Parameters
        ----------
        path : str or Path
        key : str
        results : dict
            ``{name: result}``, as ``derive`` returns them.
        """
        atomic_write_text(Path(path), self.text(key, results))

    def entries(self, path, key: str):
        """The stored entries ``{name: JSON value}`` at ``path`` (a path or an
        :mod:`importlib.resources` resource) under ``key``, not decoded; None when
        ``path`` is None or the file is missing, not a regular file (a FIFO, a device: never waited on),
        larger than :data:`MAX_FILE_BYTES`, stale, not JSON, its results do not match its
        digest (edited) or are not of the store's ``shape`` (an entry missing or ill-typed).

        Parameters
        ----------
        path : Path, importlib.resources.abc.Traversable or None
        key : str

        Returns
        -------
        dict or None
        """
        if path is None:
            return None
        try:
            data = json.loads(read_bounded(path, MAX_FILE_BYTES))
        except (OSError, ValueError, RecursionError):
            return None
        if not (isinstance(data, dict) and data.get("format") == FORMAT and data.get("key") == key
                and isinstance(data.get("results"), dict) and data.get("digest") == results_digest(data["results"])
                and matches(data["results"], self.shape())):
            return None
        return data["results"]

    def read(self, path, key: str):
        """The decoded results at ``path`` under ``key``; None when missing, stale or damaged.

        Parameters
        ----------
        path : str, Path or importlib.resources.abc.Traversable
        key : str

        Returns
        -------
        dict or None
        """
        entries = self.entries(Path(path) if isinstance(path, str) else path, key)
        try:
            return None if entries is None else self.decode(entries)
        except _DAMAGED:
            return None

    def load(self, *, rebuild: bool = False) -> dict:
        """Every result: from memory, else a fresh cache (shipped, then the user's),
        else derived and saved to the user cache (a warning on stderr, once, when
        it is not writable). Never writes the shipped file (:meth:`rebuild` does).

        Parameters
        ----------
        rebuild : bool, optional
            Derive again, ignoring memory and the files (default False).

        Returns
        -------
        dict
            ``{name: result}``, sorted by name.
        """
        if self.memo is not None and not rebuild:
            return self.memo
        key = self.key()
        data = None if rebuild else (self.read(self.shipped, key) or self.read(self.user_path(key), key))
        if data is None:        # in a file's order (sorted by name), as a read from one gives them
            data = dict(sorted(self.derive().items()))
            errors = save_first_writable((self.user_path(key),), self.text(key, data))
            if errors and not self.warned:
                self.warned = True
                note(f"{self.prog}: warning: cannot save the {self.what} (" + "; ".join(errors)
                     + "); results will be derived again next time")
        self.memo = data
        return data

    def lazy(self) -> Mapping:
        """Every result, as :meth:`load` gives them, but each decoded on first access.

        For a command that shows a part of the results (``print_dynamics`` prints about 60 of the paper's
        91): the rest are never decoded. The file's shape and key are checked at once; an entry that turns
        out to be damaged when it is read makes the mapping fall back to :meth:`load`, which rebuilds the
        cache. ``decode`` must accept any subset of the entries."""
        if self.memo is not None:
            return self.memo
        key = self.key()
        entries = self.entries(self.shipped, key) or self.entries(self.user_path(key), key)
        return self.load() if entries is None else LazyResults(self, entries)

    def rebuild(self) -> str:
        """Derive every result, rewrite the shipped file; returns the key.

        Raises
        ------
        derivations.core.cli.UsageError
            In an installed package (not a :func:`~derivations.core.version.source_checkout`), whose files are never written.
        """
        if source_checkout() is None:
            from .cli import UsageError
            raise UsageError("--rebuild rewrites the shipped cache of a source checkout; this qkov is installed "
                             f"in {str(PACKAGE_DIR)!r}, never written (it derives into {str(cache_dir())!r})")
        key = self.key()
        self.memo = self.derive()
        self.write(Path(str(self.shipped)), key, self.memo)
        return key

    def main(self, argv, parser, *, shipped_label: str, extra_checks=(), after_rebuild=None,
             listing=None) -> int:
        """The command line of a store: ``--check`` (exit 1 while stale), ``--rebuild``, else
        ``listing()`` (the text to print) or the help.

        ``extra_checks``: ``[(label, is_fresh(key))]`` reported after the shipped file;
        ``after_rebuild(key, results)`` returns the paths it wrote besides the shipped file.
        Bad options (``parser`` a :class:`~derivations.core.cli.OneLineParser`):
        one line on stderr, exit status 2, nothing done.

        Parameters
        ----------
        argv : list of str or None
            The arguments (None: ``sys.argv[1:]``).
        parser : argparse.ArgumentParser
            Defines ``--check`` and ``--rebuild``.
        shipped_label : str
            The shipped file's name in the ``--check`` report.
        extra_checks : sequence of (str, callable), optional
            Further freshness checks.
        after_rebuild : callable, optional
            Writes the files derived from the results.
        listing : callable, optional
            ``listing() -> str``, printed without an option.

        Returns
        -------
        int
            The exit status: 0, 1 (stale at ``--check``, or output not written) or 2 (bad options, or
            ``--rebuild`` of an installed package).
        """
        from .cli import UsageError, usage_error
        from .output import emit
        try:
            args = parser.parse_args(argv)
        except UsageError as exc:
            return usage_error(self.prog, exc)
        if args.check:
            key = self.key()
            states = [(shipped_label, self.read(self.shipped, key) is not None)]
            states += [(label, fresh(key)) for label, fresh in extra_checks]
            ok = all(fresh for _, fresh in states)
            text = "; ".join(f"{label} is {'fresh' if fresh else 'STALE'}" for label, fresh in states)
            status = emit(text + ("" if ok else f": run python -m {self.prog} --rebuild"), self.prog)
            return status or (0 if ok else 1)
        if args.rebuild:
            try:
                key = self.rebuild()
            except UsageError as exc:
                return usage_error(self.prog, exc)
            paths = after_rebuild(key, self.memo) if after_rebuild else []
            return emit(f"wrote {self.shipped} (key {key[:12]})" + "".join(f", {p}" for p in paths), self.prog)
        if listing is None:
            parser.print_help()
            return 0
        return emit(listing(), self.prog)
