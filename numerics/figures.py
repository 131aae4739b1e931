"""Moved to :mod:`numerics.output`; this name forwards to it."""
from .output import *  # noqa: F401,F403
from .output import __all__  # noqa: F401

if __name__ == "__main__":  # python -m numerics.figures
    import sys

    from .output import main
    sys.exit(main())
