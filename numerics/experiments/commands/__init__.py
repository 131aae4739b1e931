"""The experiments' commands, one module each: ``fig2``, ``fig3``, ``sweep``, ``reproduce``, ``predict``, ``boundary``.

Each module has ``add_parser(subparsers)`` and ``prepare(args) -> (work,
format)``: ``prepare`` checks every input (the output directory last) and does
no work; ``work()`` trains and writes, returning the payload that ``format``
turns into the human-readable summary. :mod:`.common` holds what they share (the task
options in :mod:`.task_options`).
"""
__all__ = ["COMMANDS"]

#: The commands' names, each its module's, in the order of the help (the command line imports a
#: command's module when it is used, inside its guard against Ctrl-C).
COMMANDS = ("fig2", "fig3", "sweep", "reproduce", "predict", "boundary")
