"""Write the theory figures: ``python -m numerics.figures [--output DIR] [--quick]``.

The command's entry point; the figures are chosen, checked and written by
:mod:`numerics.output.figures` (:func:`numerics.output.make_figures`), drawn by
:mod:`numerics.output.theory` and :mod:`numerics.output.attention`. The output directory is created
and probed before any figure is made; bad input prints one line and exits with status 2, nothing
written.
"""
import sys

from derivations.core.interrupt import exit_on_interrupt

__all__ = ["main"]

PROG = "python -m numerics.figures"


@exit_on_interrupt(PROG)
def main(argv=None) -> int:
    """Run ``python -m numerics.figures`` (:func:`numerics.output.figures.main`, imported here, inside
    the guard against Ctrl-C: loading NumPy and matplotlib takes a good part of a second); returns the
    exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 written, 1 a write failed, 2 bad input (or matplotlib not installed), 130 Ctrl-C,
        143 SIGTERM.
    """
    from derivations.core.cli import UsageError, usage_error
    from derivations.core.optional import require_optional

    try:                # (the figures' module draws with matplotlib from its first line)
        require_optional("matplotlib", "plot", "drawing the figures")
    except UsageError as exc:
        return usage_error(PROG, exc)
    from .output import figures
    return figures.main(argv)


if __name__ == "__main__":
    sys.exit(main())
