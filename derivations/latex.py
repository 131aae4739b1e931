r"""Write the derived theory as LaTeX: ``python -m derivations.latex --output DIR``.

The command's entry point; the document is built by
:mod:`derivations.output.latex` (the one LaTeX builder). ``DIR/qkov_dynamics.tex`` is a standalone article with
every result of :func:`derivations.catalog.results` as a numbered equation and
a section per built-in task; ``DIR/snippets/<name>.tex`` holds each result's
equation alone. The output directory is created and probed before any work;
bad input prints one line and exits with status 2, nothing written.
"""
import sys

from .core.interrupt import exit_on_interrupt

__all__ = ["main"]


@exit_on_interrupt("latex")
def main(argv=None) -> int:
    """Run ``python -m derivations.latex`` (:func:`derivations.output.latex.main`, imported here, inside
    the guard against Ctrl-C: loading SymPy takes most of a second); returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 written, 1 a write failed, 2 bad input, 130 Ctrl-C, 143 SIGTERM.
    """
    from .output import latex as builder
    return builder.main(argv)


if __name__ == "__main__":
    sys.exit(main())
