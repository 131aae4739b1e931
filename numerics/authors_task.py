"""Moved to :mod:`numerics.experiments.theory`; this name forwards to it."""
from .experiments.theory import *  # noqa: F401,F403
from .experiments.theory import __all__  # noqa: F401
# the command moved to numerics.experiments.predict: ``python -m numerics.authors_task`` runs it
from .experiments.predict import build_parser, main  # noqa: F401

if __name__ == "__main__":
    import sys

    sys.exit(main(prog="python -m numerics.authors_task"))
