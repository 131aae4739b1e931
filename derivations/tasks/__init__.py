"""Layer 3: the concrete tasks, built with the engine.

* :mod:`~derivations.tasks.variants`: the paper's task and its variants;
* :mod:`~derivations.tasks.authors`: the authors' Figure-2 task, from
  :mod:`derivations.core.authors_setting`;
* :mod:`~derivations.tasks.registry`: the built-in tasks by name;
* :mod:`~derivations.tasks.paper`: the paper's closed forms (the invariant
  family for symbolic M, reduced ODEs, factorization, first integrals,
  sharpness, asymptotics, the published equations);
* :mod:`~derivations.tasks.closed_forms`: those closed forms as capabilities of
  the tasks that have them (the paper, and the tasks the engine maps onto its
  equations), or the reason a task does not.

The task description itself (:class:`~derivations.engine.Task`,
:class:`~derivations.engine.TokenGroup`, :func:`~derivations.engine.validate_parameter`)
is the engine's: ``from derivations.engine import Task, TokenGroup``.

>>> from derivations.tasks import get_task, capability, capabilities
>>> get_task("shared-irrelevant").parameter_names()
('n_c',)
>>> capability("shared-irrelevant", "reduced_odes")["dmu_QK_dt"]
-alpha*eta_QK*mu_OV*(M - 1)*(alpha - 1)*(n_c + 1)/(M*b**2*n_c*(M + exp(alpha*mu_OV) - 1))
>>> capabilities("query-in-context")["orbit"][:80]
"task 'query-in-context' (CACO) has no orbit: the engine does not map it onto the"
"""
from ..core import lazy_exports

__all__ = ["TASKS", "get_task", "is_task_file", "is_builtin", "task_key", "symbolic_task_names",
           "CAPABILITIES", "CapabilityUnavailable", "capability", "capabilities"]

# loaded on first use: looking up a task does not import the engine's reduction or the closed forms
__getattr__, __dir__ = lazy_exports(__name__, {
    ".registry": ("TASKS", "get_task", "is_task_file", "is_builtin", "task_key", "symbolic_task_names"),
    ".closed_forms": ("CAPABILITIES", "CapabilityUnavailable", "capability", "capabilities"),
})
