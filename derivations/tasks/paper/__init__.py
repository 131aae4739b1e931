"""The paper's closed forms: what the ``paper`` task has beyond the engine's reduction.

The engine reduces the ``paper`` task (:func:`derivations.engine.reduce_task`)
to the same ODEs as these modules (tests hold them equal); what the paper adds
are closed forms for symbolic M, attached to the task as *capabilities*
(:mod:`derivations.tasks.closed_forms`):

* :mod:`~derivations.tasks.paper.model`: the paper's model and its invariant
  family for symbolic M;
* :mod:`~derivations.tasks.paper.explicit`: explicit instances of the model
  (every entry an independent symbol), the exact check of the reduction;
* :mod:`~derivations.tasks.paper.reduction`: the reduced ODEs of every
  parameterization and the published equations (a check, never a source);
* :mod:`~derivations.tasks.paper.factorization`: conserved quantities and
  effective rates of factorized circuits, balanced and unbalanced
  (``C_QK``, ``C_OV``);
* :mod:`~derivations.tasks.paper.first_integral`: first integrals, line
  coordinates, the Wright-omega / Ei orbits;
* :mod:`~derivations.tasks.paper.sharpness`: the state at a loss and the signs
  of its derivatives in the rate ratio;
* :mod:`~derivations.tasks.paper.asymptotics`: early phase and late time.

The modules are imported on demand (each derivation runs SymPy for seconds,
cached by :mod:`derivations.catalog`).
"""
__all__ = ["model", "explicit", "reduction", "factorization", "first_integral", "sharpness", "asymptotics"]
