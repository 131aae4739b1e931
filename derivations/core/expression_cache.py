"""What the derivation caches share: the source key, the user-cache path, saving.

:mod:`derivations.catalog` (the paper's results) and
:mod:`derivations.task_catalog` (the task engine's) each keep a JSON file of
derived expressions, stored as whitelisted ``srepr`` text
(:func:`derivations.srepr_reader.to_srepr`, read back without ``eval`` by
:func:`derivations.srepr_reader.from_srepr`), under a key that changes
whenever the source of a deriving module or the SymPy version changes.

>>> from derivations.core.expression_cache import source_key, user_cache
>>> len(source_key(["symbols"]))
64
>>> user_cache("derived", "abc").name
'derived-abc.json'
"""
from __future__ import annotations

import os
from pathlib import Path

from .atomic_file import atomic_write_text

__all__ = ["PACKAGE_DIR", "source_key", "user_cache", "save_first_writable"]

PACKAGE_DIR = Path(__file__).resolve().parent.parent   # the derivations package


def source_key(modules, tag: str = "") -> str:
    """SHA-256 over the source of ``derivations.<name>`` for each name in
    ``modules``, then ``tag`` and the SymPy version."""
    import hashlib
    import importlib.metadata as md
    h = hashlib.sha256()
    for name in modules:
        h.update((PACKAGE_DIR / f"{name}.py").read_bytes())
    h.update(f"{tag}{md.version('sympy')}".encode())
    return h.hexdigest()


def user_cache(stem: str, key: str) -> Path:
    """The user cache file ``$XDG_CACHE_HOME/qkov/<stem>-<key>.json`` (default ``~/.cache``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "qkov" / f"{stem}-{key}.json"


def save_first_writable(paths, text: str) -> list:
    """Write ``text`` atomically to the first of ``paths`` that is writable.

    Returns the reasons the paths tried failed: empty when the text was saved,
    one entry per path when none was writable."""
    errors = []
    for path in paths:
        try:
            atomic_write_text(path, text)
            return []
        except OSError as exc:
            errors.append(f"{path}: {exc.strerror or exc}")
    return errors
