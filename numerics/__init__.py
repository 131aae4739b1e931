"""The numeric side of qkov (NumPy/SciPy): the derived theory evaluated and checked, and the SGD experiments.

:mod:`numerics.functions` (code generated from the derivations, special
functions), :mod:`numerics.model` (the full-matrix attention model and its
invariant family), :mod:`numerics.dynamics` (integration, the reduced system,
the state at a loss), :mod:`numerics.verify`, :mod:`numerics.output` (figures)
and :mod:`numerics.experiments`. The commands are modules:
``python -m numerics.verify``, ``numerics.figures``, ``numerics.experiments``.
"""
__all__ = ["functions", "model", "dynamics", "verify", "output", "experiments"]
