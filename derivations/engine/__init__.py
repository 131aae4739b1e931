"""Layer 2: the derivation engine, from a task description to its reduced dynamics.

* :mod:`~derivations.engine.task`: :class:`Task`/:class:`TokenGroup` (validated
  when built), concrete instances, :func:`validate_parameter`;
* :mod:`~derivations.engine.symmetry`: the symmetry group and its orbits;
* :mod:`~derivations.engine.family`: the invariant family's coordinates;
* :mod:`~derivations.engine.reduce`: :func:`reduce_task`, one function per step;
* :mod:`~derivations.engine.reachable`: the smallest invariant family from the
  initialization (step 3);
* :mod:`~derivations.engine.first_integral`: the one separation of the orbit
  equation (used by the engine and the paper's closed forms);
* :mod:`~derivations.engine.explicit`: explicit instances and the one
  invariance check.

Concrete tasks are built with the engine in :mod:`derivations.tasks`.

>>> from derivations.engine import reduce_task
>>> from derivations.symbolic.symbols import mu_OV
>>> reduce_task("paper", "CACO").odes_alpha[mu_OV]
alpha*eta_OV/(b*(M + exp(alpha*mu_OV) - 1))
"""
from ..core import lazy_exports

__all__ = ["Task", "TokenGroup", "TaskInstance", "TASK_PARAMETERS", "n_c", "validate_parameter",
           "parameter_names", "check_parameter_names",
           "Coordinate", "TaskFamily", "TaskReduction", "reduce_task",
           "separate", "integrals", "first_integral_of", "orbit_of",
           "basis_matrices", "explicit_loss", "invariance_residual", "nonzero_entries"]

# loaded on first use: describing a task (engine.task) does not import the reduction
__getattr__, __dir__ = lazy_exports(__name__, {
    ".task": ("Task", "TokenGroup", "TASK_PARAMETERS", "n_c"),
    ".instance": ("TaskInstance",),
    ".checks": ("validate_parameter", "parameter_names", "check_parameter_names"),
    ".family": ("Coordinate", "TaskFamily"),
    ".reduce": ("TaskReduction", "reduce_task"),
    ".first_integral": ("separate", "integrals", "first_integral_of", "orbit_of"),
    ".explicit": ("basis_matrices", "explicit_loss", "invariance_residual", "nonzero_entries"),
})
