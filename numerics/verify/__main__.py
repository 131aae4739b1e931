"""``python -m numerics.verify``: see :mod:`numerics.verify.cli`, imported inside the guard against
Ctrl-C (loading NumPy and SciPy takes half a second: Ctrl-C then is one line too, exit 130)."""
import sys

from derivations.core.interrupt import exit_on_interrupt


@exit_on_interrupt("python -m numerics.verify")
def main(argv=None) -> int:
    """Run :func:`numerics.verify.cli.main` (imported here, inside the guard).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The command's exit status; 130 for Ctrl-C, 143 for SIGTERM.
    """
    from .cli import main as run
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
