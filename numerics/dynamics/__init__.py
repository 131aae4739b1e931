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
  systems of the built-in tasks (:func:`reduced_system`, :func:`family_system`).
* :mod:`~numerics.dynamics.paper_closed_forms`: the paper's closed forms
  (first integral, orbits, state at a loss) as capabilities of its system.
* :mod:`~numerics.dynamics.state`: :func:`state_at_loss`, the one entry point
  for the state at a loss of every task, and its one result type
  :class:`StateAtLoss`, whose ``method`` says what answered (the closed form,
  also for tasks the engine maps onto the paper's equations, or the reduced
  flow).
* :mod:`~numerics.dynamics.training`: :func:`gradient_flow` and
  :func:`gradient_descent` of every full-matrix model (a :class:`Trajectory`).
* :mod:`~numerics.dynamics.crossover`: where attention goes, the master curve of
  the CACO flow (:func:`master_shares`, shares as functions of
  :math:`\Lambda`) and the crossover ratio (:func:`crossover_lambda`,
  :func:`boundary`).
* :mod:`~numerics.dynamics.closed_form`: the paper's CACO state at a loss in
  closed form (:func:`numerics.dynamics.closed_form.state_at_loss`, the
  documented ``numerics.closed_form.state_at_loss``), its mpmath reference and
  :func:`time_to_loss`.

The names are imported on first access, so that importing one submodule (the
cold path of the closed form) does not import the others (SciPy's integrators).
"""
from __future__ import annotations

import importlib

#: ``{public name: defining submodule}``.
_HOMES = {
    "Trajectory": "trajectory",
    "solve_bounded": "bounded_ivp",
    "solve_loss_levels": "bounded_ivp",
    "ReducedSystem": "reduced_system",
    "solve_reduced": "reduced_ode",
    "state_at_loss": "state",
    "StateAtLoss": "state",
    "REDUCED_FLOW_RANGE": "state",
    "state_at_loss_mpmath": "closed_form",
    "time_to_loss": "closed_form",
    "LambdifiedFlow": "lambdified_flow",
    "TaskReducedSystem": "lambdified_flow",
    "reduced_system": "task_systems",
    "family_system": "task_systems",
    "task_parameters": "task_systems",
    "task_reduction": "task_systems",
    "task_state_at_loss": "state",
    "gradient_flow": "training",
    "gradient_descent": "training",
    "master_shares": "crossover",
    "crossover_lambda": "crossover",
    "boundary": "crossover",
    "lambda_of_ratio": "crossover",
    "ratio_of_lambda": "crossover",
    "margin_at_loss": "crossover",
    "task_shape": "crossover",
}

__all__ = list(_HOMES)


def __getattr__(name):
    """The public names, imported from their submodule on first access."""
    if name in _HOMES:
        value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
