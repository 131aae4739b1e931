"""Moved to :mod:`numerics.verify.task_kinds`; this name forwards to it."""
from .verify.task_kinds import *  # noqa: F401,F403
from .verify.task_kinds import __all__  # noqa: F401
from .verify.cli import build_parser, main  # noqa: F401
from .verify.run import run_task_checks  # noqa: F401
