"""Making the theory figures: :func:`~numerics.output.figures.make_figures`, and the command
``python -m numerics.figures`` (:mod:`numerics.figures` is its entry point).

The figures themselves are drawn by :mod:`numerics.output.theory` and :mod:`numerics.output.attention`
and written by :func:`numerics.output.save_figure`; this module chooses, checks and writes them. The
output directory is created and really probed (a temporary file is written and removed) before any
figure is made; a path that cannot take the files is one line on stderr and exit status 2, with
nothing left behind.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

from derivations.core.cli import OneLineParser, UsageError, parse_list, usage_error
from derivations.core.interrupt import exit_on_interrupt
from derivations.core.output import emit, missing_directories, note

from .attention import SGD_FIGURES, sgd_points
from .files import FORMATS, check_dpi, check_formats, prepare_figure_dir, save_figure
from .style import DPI, DPI_RANGE, STYLE
from .theory import FIGURES

__all__ = ["DEFAULT_OUTPUT", "make_figures", "check_output_dir", "check_data", "build_parser", "main"]

#: Default output directory (relative to the working directory).
DEFAULT_OUTPUT = Path("docs") / "figures"
PROG = "python -m numerics.figures"


def _check_names(names):
    """The figure names, each once in the order given (all by default)."""
    if names is None:
        return tuple(FIGURES)
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    bad = [n for n in names if n not in FIGURES]
    if bad or not names:
        raise ValueError(f"unknown figure(s) {bad}; choose from {list(FIGURES)}")
    return tuple(dict.fromkeys(names))


def check_output_dir(output_dir, names=None, formats=None) -> Path:
    """The output directory, created and probed, if the figures ``names`` in
    ``formats`` can be written there (:func:`numerics.output.files.prepare_figure_dir`:
    a check of the path, then a real write of a temporary file; nothing is
    left behind when it fails).

    Parameters
    ----------
    output_dir : str or path-like
    names : iterable of str, optional
        Figures of :data:`~numerics.output.theory.FIGURES` (default: all).
    formats : iterable of str, optional
        Of :data:`~numerics.output.files.FORMATS` (default: all of them).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        Naming what is wrong with the path.
    """
    file_names = [f"{n}.{f}" for n in (names or FIGURES) for f in (FORMATS if formats is None else formats)]
    return prepare_figure_dir(output_dir, file_names)


def check_data(names=None) -> None:
    """Read and check the stored data the figures ``names`` draw (the SGD runs of the figures of
    :data:`~numerics.output.attention.SGD_FIGURES`, :func:`numerics.output.attention.sgd_points`).

    Parameters
    ----------
    names : iterable of str, optional
        Figures of :data:`~numerics.output.theory.FIGURES` (default: all).

    Raises
    ------
    ValueError
        A damaged or missing data file, in one line.
    """
    if SGD_FIGURES & set(_check_names(names)):
        sgd_points()


def make_figures(output_dir=DEFAULT_OUTPUT, formats=("png", "pdf"), *, names=None,
                 quick=False, dpi=None, verbose=False):
    """Make the figures and write them to ``output_dir`` (created if missing).

    Parameters
    ----------
    output_dir : str or Path
    formats : sequence of {"png", "pdf", "svg"}
        Each written once, however often it is named.
    names : sequence of str, optional
        Subset of :data:`~numerics.output.theory.FIGURES` (default: all, in order); a name
        given twice is drawn once.
    quick : bool
        Coarser grids (for tests).
    dpi : float, optional
        Raster resolution, in :data:`~numerics.output.style.DPI_RANGE` (default
        :data:`~numerics.output.style.DPI`).
    verbose : bool
        Print one line per figure (name, seconds) to stderr.

    Returns
    -------
    list[pathlib.Path]
        The written files, figure by figure, in the order of ``formats``.

    Raises
    ------
    ValueError
        Unknown format or figure name, dpi outside the range, an
        ``output_dir`` that cannot take the files (see
        :func:`check_output_dir`) or damaged data (:func:`check_data`); raised
        before any figure is made.
    """
    formats = check_formats(formats)
    names = _check_names(names)
    dpi = check_dpi(DPI if dpi is None else dpi)
    check_data(names)
    output_dir = check_output_dir(output_dir, names, formats)
    paths = []
    for name in names:
        t0 = time.perf_counter()
        fig = FIGURES[name](quick=quick)         # drawn in STYLE (style.drawn_in)
        paths += save_figure(fig, output_dir, name, formats, dpi, style=STYLE)
        if verbose:
            note(f"{name}: {time.perf_counter() - t0:.1f} s")
    return paths


def build_parser():
    """The argument parser of ``python -m numerics.figures`` (also used by the docs)."""
    p = OneLineParser(prog=PROG,
                      description="Write the figures of the QK/OV dynamics as PNG and PDF "
                                  "(exit 0: written, 1: a file could not be written, 2: bad "
                                  "arguments, nothing written).")
    p.add_argument("--output", "-o", default=str(DEFAULT_OUTPUT), metavar="DIR",
                   help=f"output directory, created if missing (default {DEFAULT_OUTPUT})")
    p.add_argument("--formats", default="png,pdf",
                   help=f"comma-separated subset of {','.join(FORMATS)} (default png,pdf; a format "
                        "named twice is written once)")
    p.add_argument("--only", nargs="+", metavar="NAME", choices=list(FIGURES),
                   help="make only these figures (a name given twice is drawn once): " + ", ".join(FIGURES))
    p.add_argument("--dpi", type=float, default=DPI,
                   help=f"PNG resolution in [{DPI_RANGE[0]:g}, {DPI_RANGE[1]:g}] (default {DPI})")
    p.add_argument("--quick", action="store_true", help="coarser grids (fast; for tests)")
    p.add_argument("--quiet", "-q", action="store_true", help="do not list the written files")
    return p


@exit_on_interrupt(PROG)
def main(argv=None):
    """Run ``python -m numerics.figures``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 ok, 1 a write failed, 2 bad arguments (one line on
        stderr, nothing written), 130 Ctrl-C, 143 SIGTERM (one line).
    """
    parser = build_parser()
    created = []           # the directories this run makes, deepest first
    try:
        try:
            args = parser.parse_args(argv)
            formats = check_formats(parse_list("--formats", args.formats, distinct=True))
            if args.only:       # argparse has read the names; refused as any list's, a name given twice
                parse_list("--only", ",".join(args.only), distinct=True)
            names = _check_names(args.only)
            check_dpi(args.dpi)
            check_data(names)
            created = missing_directories(args.output)
            out = check_output_dir(args.output, names, formats)
        except (UsageError, ValueError) as exc:
            return usage_error(parser.prog, str(exc).replace("dpi must", "--dpi must"))
        t0 = time.perf_counter()
        try:
            paths = make_figures(out, formats, names=names, quick=args.quick, dpi=args.dpi,
                                 verbose=not args.quiet)
        except OSError as exc:
            name = exc.filename2 or exc.filename        # (an atomic write's rename: the file it replaces)
            where = f"cannot write {name}: {exc.strerror or exc}" if name else str(exc)
            note(f"{parser.prog}: error: {where}".replace("\n", " "))
            return 1
    finally:               # (a write that failed, Ctrl-C before a figure): those that hold nothing removed again
        for directory in created:
            with contextlib.suppress(OSError, ValueError):
                directory.rmdir()
    if args.quiet:
        return 0
    rc = emit("\n".join(str(path) for path in paths), parser.prog)
    if rc == 0:         # (a stdout that failed: its one line said so, and nothing follows it)
        note(f"{len(paths)} files in {time.perf_counter() - t0:.1f} s")
    return rc
