r"""The dynamics of the reduced coordinates: integration, closed forms, the state at a loss.

* :mod:`~numerics.dynamics.trajectory`: :class:`Trajectory`, the one result
  type of every integration (reduced flow, full model).
* :mod:`~numerics.dynamics.bounded_ivp`: :func:`solve_bounded`, the bounded
  step loop with level-crossing events that every integration uses.
* :mod:`~numerics.dynamics.reduced_system`: :class:`ReducedSystem`, the one
  reduced-system class of every task (generated code for the paper's task,
  run-time lambdify otherwise); :mod:`~numerics.dynamics.reduced_ode`:
  :func:`solve_reduced`, its one-call form.
* :mod:`~numerics.dynamics.lambdified_flow`: :class:`LambdifiedFlow`, the
  run-time lambdify backend (with a SymPy Jacobian) of every task without
  generated code; :mod:`~numerics.dynamics.task_systems`: the engine's reduced
  systems of the built-in tasks (:func:`reduced_flow`, :func:`family_system`).
* :mod:`~numerics.dynamics.paper_closed_forms`: the paper's closed forms
  (first integral, orbits, state at a loss) as capabilities of its system.
* :mod:`~numerics.dynamics.state`: :func:`state_at_loss`, the one entry point
  for the state at a loss of every task; :mod:`~numerics.dynamics.state_result`:
  its one result type :class:`StateAtLoss`, whose ``method`` says what
  answered (the closed form, also for tasks the engine maps onto the paper's
  equations, or the reduced flow).
* :mod:`~numerics.dynamics.training`: :func:`gradient_flow` and
  :func:`gradient_descent` of every full-matrix model (a :class:`Trajectory`).
* :mod:`~numerics.dynamics.crossover`: where attention goes, the master curve of
  the CACO flow (:func:`master_shares`, shares as functions of
  :math:`\Lambda`) and the crossover ratio (:func:`crossover_lambda`,
  :func:`boundary`); :func:`master_lambda`, :math:`\Lambda` of any task;
  :mod:`~numerics.dynamics.sign_change`: :func:`log_sign_change`, the one bracketing search
  in a logarithm.
* :mod:`~numerics.dynamics.closed_form`: the paper's CACO state at a loss in
  closed form (:func:`numerics.dynamics.closed_form.state_at_loss`), its
  mpmath reference and :func:`time_to_loss`.

The names are imported on first access, so that importing one submodule (the
cold path of the closed form) does not import the others (SciPy's integrators).
"""
from derivations.core.exports import lazy_exports

#: ``{defining submodule: public names}``.
_HOMES = {
    ".trajectory": ("Trajectory",),
    ".bounded_ivp": ("solve_bounded", "solve_loss_levels"),
    ".reduced_system": ("ReducedSystem",),
    ".reduced_ode": ("solve_reduced",),
    ".state": ("state_at_loss", "REDUCED_FLOW_RANGE"),
    ".state_result": ("StateAtLoss",),
    ".closed_form": ("state_at_loss_mpmath", "time_to_loss"),
    ".lambdified_flow": ("LambdifiedFlow",),
    ".task_systems": ("reduced_flow", "family_system", "task_parameters"),
    ".training": ("gradient_flow", "gradient_descent"),
    ".crossover": ("master_shares", "crossover_lambda", "boundary", "lambda_of_ratio",
                   "ratio_of_lambda", "margin_at_loss", "master_lambda"),
    ".query_copies": ("task_shape",),
    ".sign_change": ("log_sign_change",),
}

__all__ = [name for names in _HOMES.values() for name in names]
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
