"""``python -m numerics.verify``: see :mod:`numerics.verify.cli`."""
import sys

from .cli import main

sys.exit(main())
