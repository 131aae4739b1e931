"""Writing figures: the one :func:`~numerics.output.files.save_figure`, formats, resolution and the
output-directory check."""
from __future__ import annotations

import os
from pathlib import Path

from derivations.core.atomic_file import atomic_write
from derivations.core.output import first_directory, prepare_output_dir

from ..validation import check_in_range
from .style import DPI, DPI_RANGE, MATPLOTLIB_FLOAT_WARNINGS

__all__ = ["FORMATS", "METADATA", "save_figure", "check_formats", "check_dpi", "prepare_figure_dir"]

#: Output formats :func:`save_figure` writes.
FORMATS = ("png", "pdf", "svg")


def check_formats(formats) -> tuple:
    """The output formats, checked, each once (in the order given).

    Parameters
    ----------
    formats : str or iterable of str
        Each one of :data:`FORMATS`.

    Returns
    -------
    tuple of str

    Raises
    ------
    ValueError
        No format, or an unknown one.
    """
    if isinstance(formats, str):
        formats = (formats,)
    formats = tuple(formats)
    if not formats:
        raise ValueError("formats must not be empty")
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ValueError(f"unknown format(s) {bad}; choose from {list(FORMATS)}")
    return tuple(dict.fromkeys(formats))


def check_dpi(dpi) -> float:
    """The resolution, checked.

    Parameters
    ----------
    dpi : float
        Dots per inch, in :data:`~numerics.output.style.DPI_RANGE`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Not a number in :data:`~numerics.output.style.DPI_RANGE`.
    """
    return check_in_range("dpi", dpi, *DPI_RANGE, scalar=True)


def _limits(ancestor):
    try:
        return os.pathconf(ancestor, "PC_NAME_MAX"), os.pathconf(ancestor, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        return 255, 4096


def _nearest_existing(absolute):
    ancestor = absolute
    try:
        while not ancestor.exists():
            ancestor = ancestor.parent
    except OSError:      # a component too long to stat: checked by the caller
        ancestor = Path(absolute.anchor)
    return ancestor


def _static_check(text, file_names):
    """Say what is wrong with the path ``text`` before touching the disk."""
    absolute = Path(text).absolute()
    ancestor = _nearest_existing(absolute)
    name_max, path_max = _limits(ancestor)
    for part in absolute.parts:
        if len(os.fsencode(part)) > name_max:
            raise ValueError(f"output {text[:60]!r}...: a path component is longer than "
                             f"{name_max} bytes")
    longest = max(len(f".{n}.xxxxxxxx") for n in file_names)
    if len(os.fsencode(str(absolute))) + 1 + longest >= path_max:
        raise ValueError(f"output {text[:60]!r}...: the file paths would exceed {path_max} bytes")
    if ancestor == absolute and not absolute.is_dir():
        raise ValueError(f"output {text!r} exists and is not a directory")
    in_the_way = first_directory([absolute / n for n in file_names]) if ancestor == absolute else None
    if in_the_way is not None:
        raise ValueError(f"output {text!r} has a {in_the_way.relative_to(absolute)} that is a directory, where that figure is written; "
                         "move it away or choose another directory")
    if not ancestor.is_dir():
        raise ValueError(f"output {text!r} lies under {str(ancestor)!r}, which is a file, "
                         "not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"output {text!r}: {str(ancestor)!r} is not writable")
    return longest


def prepare_figure_dir(output_dir, file_names=("figure.png",)) -> Path:
    """Create the output directory and prove that it takes the files, before any work.

    First the path is checked without writing (it is not empty; it is a
    directory or does not exist yet; its nearest existing ancestor is a
    writable directory, not a file; no component and no file path exceeds the
    file system's limits: ``NAME_MAX``, ``PATH_MAX``), then it is created and
    really probed with a temporary file as long as the longest file's
    temporary name (:func:`derivations.core.output.prepare_output_dir`; what it
    created is removed again if the probe fails).

    Parameters
    ----------
    output_dir : str or Path
    file_names : iterable of str
        The names of the files to be written (``name.format``).

    Returns
    -------
    pathlib.Path
        The directory, created.

    Raises
    ------
    ValueError
        Naming what is wrong with the path.
    """
    text = os.fspath(output_dir) if isinstance(output_dir, (str, os.PathLike)) else None
    if not text or not text.strip():
        raise ValueError(f"output directory must be a non-empty path; got {output_dir!r}")
    longest = _static_check(text, tuple(file_names))
    return prepare_output_dir(text, name="output", longest_name=longest)


#: The metadata each format is saved with: no creation date, so that the same
#: figure gives the same bytes (PNG has none by default).
METADATA = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}


def save_figure(fig, output_dir, name, formats=("png", "pdf"), dpi=DPI, style=None) -> list:
    """Save ``fig`` as ``output_dir/name.<fmt>`` for each format.

    Each file is written to a temporary file and renamed, so it is complete or
    absent; ``output_dir`` is created if missing; ``style`` (rc parameters,
    e.g. :data:`~numerics.output.style.STYLE`) is in force while saving, in a
    :func:`matplotlib.rc_context` (the global ``rcParams`` are left as they
    were), and matplotlib's floating-point warnings are not shown
    (:data:`~numerics.output.style.MATPLOTLIB_FLOAT_WARNINGS`). No creation
    date is written (:data:`METADATA`): the same figure gives the same bytes.
    The figure is left as it was: a pyplot figure of the caller stays open.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    output_dir : str or path-like
    name : str
        File name without suffix.
    formats : iterable of str
        Each one of :data:`FORMATS`.
    dpi : float
        Resolution of raster formats.
    style : dict, optional
        Matplotlib rc parameters in force while saving.

    Returns
    -------
    list of pathlib.Path
        In the order of ``formats``.

    Raises
    ------
    ValueError
        An unknown format.
    OSError
        A file cannot be written.
    """
    import warnings

    import matplotlib

    directory = Path(output_dir)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    with matplotlib.rc_context(style or {}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", **MATPLOTLIB_FLOAT_WARNINGS)
        for fmt in check_formats(formats):
            path = directory / f"{name}.{fmt}"
            atomic_write(path, lambda fh: fig.savefig(fh, dpi=dpi, format=fmt, metadata=METADATA.get(fmt)),
                         binary=True)
            out.append(path)
    return out
