"""The version of the qkov that is running, from its one source: ``setup.cfg``'s ``[metadata] version``.

A source checkout (:func:`source_checkout`: qkov's ``setup.cfg`` beside the ``derivations`` package) is
its own version: its ``setup.cfg``, read as data. An installed package is the distribution installed in
the folder it runs from (its metadata, which ``setup.cfg`` built), not the first qkov distribution on
``sys.path``: a checkout on ``PYTHONPATH`` over an older installation reports the checkout's version.

Plain Python, as the rest of :mod:`derivations.core`.

>>> running_version() == running_version() != ""
True
"""
from __future__ import annotations

import argparse
import configparser
import re
from pathlib import Path

from .atomic_file import read_bounded
from .output import emit

__all__ = ["PACKAGE_DIR", "source_checkout", "running_version", "VersionAction"]

#: The ``derivations`` package that is running (its folder).
#:
#: :meta hide-value:
PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: Largest ``setup.cfg`` read (bytes).
_SETUP_BYTES = 1 << 16


def _setup_text(root: Path):
    """The text of ``root/setup.cfg``, or None where there is none to read."""
    try:
        return read_bounded(root / "setup.cfg", _SETUP_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def source_checkout():
    """The root of the source checkout this package runs from, or None for an installed package.

    A checkout is recognised by qkov's ``setup.cfg`` beside the ``derivations`` package; an
    installed package's folder (``site-packages``) has none.

    Returns
    -------
    pathlib.Path or None
    """
    root = PACKAGE_DIR.parent      # a checkout's root, or an installation's site-packages
    text = _setup_text(root)
    return root if text is not None and re.search(r"(?m)^name\s*=\s*qkov\s*$", text) else None


def running_version() -> str:
    """The version of the running qkov: a checkout's ``setup.cfg`` ``[metadata] version``, else the metadata
    of the qkov distribution installed where the package runs from.

    Returns
    -------
    str
        The version, or a parenthesised sentence saying why there is none.
    """
    root = source_checkout()
    if root is not None:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(_setup_text(root) or "")
            return parser["metadata"]["version"].strip()
        except (configparser.Error, KeyError):
            return f"(unknown: {root / 'setup.cfg'} has no [metadata] version)"
    import importlib.metadata

    for dist in importlib.metadata.distributions(path=[str(PACKAGE_DIR.parent)]):
        if (dist.metadata["Name"] or "").lower() == "qkov":
            return dist.version
    return f"(unknown: no qkov distribution installed in {PACKAGE_DIR.parent})"


class VersionAction(argparse.Action):
    """``--version``: :func:`running_version`, one line through :func:`~derivations.core.output.emit`,
    exit status 0.

    Parameters
    ----------
    option_strings : list of str
        The option's names (``["--version"]``).
    dest, default : optional
        As :class:`argparse.Action`'s (nothing is stored).
    help : str, optional
        The option's help text.
    """

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(emit(f"qkov {running_version()}", parser.name))
