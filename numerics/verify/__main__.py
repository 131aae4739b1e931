"""``python -m numerics.verify``: see :mod:`numerics.verify.cli`."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
