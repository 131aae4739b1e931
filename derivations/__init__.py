"""The symbolic side of qkov (SymPy): the task engine and the paper's theory, derived.

Layers, bottom first (each imports only those below it; ``docs/architecture.md``):
:mod:`derivations.core` (names, input checks, files, command-line helpers, the
expression cache; no SymPy), :mod:`derivations.symbolic` (symbols, special
functions, the srepr reader), :mod:`derivations.engine` (tasks and their
reduction), :mod:`derivations.tasks` (the built-in tasks and the paper's closed
forms), :mod:`derivations.output` (printed dynamics, LaTeX, generated numeric
code). The commands are modules: ``python -m derivations.print_dynamics``,
``derivations.latex``, ``derivations.catalog``, ``derivations.task_catalog``.
"""
__all__ = ["core", "symbolic", "engine", "tasks", "output"]
