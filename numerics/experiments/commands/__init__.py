"""The experiments' commands, one module each: ``fig2``, ``fig3``, ``sweep``, ``reproduce``, ``predict``, ``boundary``.

Each module has ``add_parser(subparsers)`` and ``prepare(args) -> (work,
format)``: ``prepare`` checks every input (the output directory last) and does
no work; ``work()`` trains and writes, returning the payload that ``format``
turns into the human-readable summary. :mod:`.common` holds what they share (the task
options in :mod:`.task_options`).
"""
from . import boundary, fig2, fig3, predict, reproduce, sweep

__all__ = ["COMMANDS"]

#: command name -> its module
COMMANDS = {"fig2": fig2, "fig3": fig3, "sweep": sweep, "reproduce": reproduce, "predict": predict,
            "boundary": boundary}
