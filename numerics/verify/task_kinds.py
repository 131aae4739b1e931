r"""The task kinds of check: an engine task's reduced system against its full matrix model.

For a task of :mod:`derivations.tasks` that the symbolic engine reduces, one
parameterization and one learning-rate ratio :math:`r = \eta_{QK}/\eta_{OV}`
(:math:`\eta_{OV} = 1`, factor rates equal to their circuit's), on a concrete
instance (default :math:`M = 4` and the task's default parameters):

* **full model**: :class:`numerics.model.attention.TaskModel` built from the task's
  concrete instance (:func:`numerics.model.instance.instance_of_task`), gradient
  flow with :func:`numerics.dynamics.training.gradient_flow` (DOP853, rtol 1e-11, atol 1e-13)
  from a point of the invariant family: zero for a collapsed circuit, the
  structured factor initialization of scale ``eps`` (default 0.1,
  :func:`numerics.model.family.structured_params`) for a factorized one;
* **reduced system**: the engine's flow on the family coordinates
  :math:`\theta_i` (:class:`numerics.dynamics.reduced_system.ReducedSystem` of
  the flow :func:`numerics.dynamics.task_systems.family_system`, same
  integrator), started at the projection of the same initial point;
* compared on a common grid of 24 times in :math:`(0, T]`, where :math:`T` is
  the time the reduced flow needs to reach the target loss (default 0.1):

  ``theta`` (tolerance 1e-7)
      max over coordinates of
      :math:`\max_t|\theta^{full}_i - \theta^{red}_i|\,\|U_i\|_F / \max_t\|W^{red}\|_F`
      (:math:`\theta^{full}`: least-squares projection of the full matrices on
      the family basis :math:`U_i`; :math:`W^{red}`: the reduced point of the
      coordinate's matrix, so a coordinate that stays 0 is measured on the scale
      of its matrix);
  ``observables`` (1e-7)
      where the engine closes the flow in the observables (score gaps
      ``mu_QK*``, logit gaps ``mu_OV*``): that ODE integrated from the
      observables of the initial point, against the observables of the
      projected full trajectory, max over time of the deviation relative to
      :math:`\max_t|\mathrm{obs}|` (requires the capability ``observables``:
      a task without it skips this kind and says why);
  ``loss``, ``alpha`` (1e-8)
      max relative deviation along the grid;
  ``distance`` (1e-9)
      max relative Frobenius distance of the full matrices from the family;
  ``loss at T`` (1e-7)
      full-model loss at T relative to the target.

>>> from numerics.verify import run_checks
>>> checks = run_checks("CAFO", [1.0], task="paper", M=3, target_loss=0.5)
>>> sorted({c.status for c in checks}), [c.quantity for c in checks][:2]
(['PASS'], ['theta', 'observables'])
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..model.family import FamilyProjector, structured_params, task_basis
from .context import Missing
from .records import rel_dev
from .registry import check_kind

__all__ = ["TaskFamily", "task_family", "TOLERANCES"]

#: Tolerances of the task checks (see the module docstring).
TOLERANCES = {"theta": 1e-7, "observables": 1e-7, "loss": 1e-8, "alpha": 1e-8, "distance": 1e-9,
              "loss at T": 1e-7}


@dataclass(frozen=True, eq=False)
class TaskFamily:
    """The invariant family of a (task, parameterization) as the verifier needs it.

    Attributes
    ----------
    system : LambdifiedFlow
        Flow on the family coordinates (``system.coords``); the basis of the
        coordinates is :func:`numerics.model.family.task_basis`.
    observables : (LambdifiedFlow, callable) or None
        The closed ODE of the observables and ``obs(theta, values)``, when the
        engine found one.
    """

    system: object
    observables: object = None


@lru_cache(maxsize=None)
def task_family(task_name, parameterization) -> TaskFamily:
    """The family of a built-in task from the engine (SymPy once per process).

    Parameters
    ----------
    task_name : str
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    TaskFamily
    """
    from derivations.task_catalog import task_reduction

    from ..dynamics.task_systems import family_system
    from derivations.tasks import get_task
    system = family_system(task_name, parameterization)
    red = task_reduction(get_task(task_name), parameterization)
    observables = None if red.odes is None else _observables(task_name, parameterization, red,
                                                              system)
    return TaskFamily(system, observables)


def _observables(task_name, parameterization, red, system):
    """The closed ODE of the observables and the map from family coordinates to them."""
    from ..functions.numeric_function import numeric
    from ..dynamics.task_systems import reduced_flow
    osys = reduced_flow(task_name, parameterization)
    exprs = tuple(red.observables[c] for c in osys.coords)
    free = set().union(*(e.free_symbols for e in exprs)) - set(system.coords)
    pars = tuple(sorted(free, key=str))
    f = numeric(exprs, tuple(system.coords) + pars, "math").func
    names = tuple(str(p) for p in pars)
    return osys, lambda theta, values: np.array(
        f(*theta, *(float(values[p]) for p in names)), dtype=float)


# --------------------------------------------------------------------------- #
# the shared prerequisite: both flows of one group on the common grid
# --------------------------------------------------------------------------- #
@dataclass
class TaskRun:
    """Both flows of one group: the grid, the full model's flow and its
    projection on the family, the reduced flow, the reduced system's values
    (parameters and rates)."""

    T: float
    grid: np.ndarray
    values: dict
    theta0: np.ndarray
    theta: np.ndarray        # projected full trajectory (n_times, n_coords)
    distance: list           # distance from the family, initial point first
    full: object             # numerics.dynamics.trajectory.Trajectory (with states y)
    reduced: object          # numerics.dynamics.trajectory.Trajectory (with coordinates y)
    family: TaskFamily
    projector: FamilyProjector


def _instance(task_name, values):
    """The task's concrete instance (:class:`numerics.model.instance.TaskInstance`)."""
    from ..model.instance import instance_of_task
    rest = {k: v for k, v in values.items() if k != "M"}
    return instance_of_task(task_name, M=int(values["M"]), **rest)


def _reduced(ctx, flow, y0):
    r"""The :class:`~numerics.dynamics.reduced_system.ReducedSystem` of the engine's ``flow``
    from ``y0``, at the group's values (:math:`\eta_{OV} = 1`, :math:`\eta_{QK} = r`)."""
    from ..dynamics.reduced_system import ReducedSystem
    return ReducedSystem(ctx.parameterization, task=ctx.task, flow=flow, mu0=y0,
                         eta_QK=ctx.ratio, eta_OV=1.0, **ctx.settings)


def task_run(ctx) -> TaskRun:
    """The flows of ``ctx``'s group, computed once (a failure is recorded once).

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.

    Returns
    -------
    TaskRun

    Raises
    ------
    numerics.verify.context.Missing
        The flows could not be computed (recorded once as a failing check).
    """
    ctx.read_full_flow = True
    return ctx.once("task_run", lambda: _compute_run(ctx))


def _compute_run(ctx):
    from ..dynamics.training import gradient_flow
    from ..model.attention import TaskModel
    o, r = ctx.options, ctx.ratio
    tol = dict(rtol=o["rtol"], atol=o["atol"])
    inst = ctx.once("instance", lambda: _instance(ctx.task, ctx.settings))
    fam = task_family(ctx.task, ctx.parameterization)
    proj = FamilyProjector(task_basis(ctx.task, ctx.parameterization, int(ctx.settings["M"]),
                                      ctx.settings), fam.system.names)
    model = TaskModel(inst, ctx.parameterization, eta_QK=r, eta_OV=1.0)
    p0 = structured_params(model, ctx.options["task_eps"])
    theta0, d0 = proj(p0)
    system = _reduced(ctx, fam.system, theta0)
    red = system.integrate(target_loss=o["target_loss"], **tol)
    if red.status != 1:
        ctx.add("reduced flow reaches target", math.nan, 0.0, message=red.message)
        raise Missing("task_run")
    T = red.target_state["t"]
    n = o["n_times"]
    grid = T * np.linspace(1.0 / n, 1.0, n)
    red = system.integrate((0.0, T), grid, **tol)
    full = gradient_flow(model, p0, grid, t_span=(0.0, T), keep_states=True, max_steps=ctx.budget, **tol)
    ctx.record_stopped("integration", [("full model", full, full.status == 0 and full.t.size == n),
                                       ("reduced flow", red, red.status == 0)], full, 0.0)
    th, dist = [], [d0]
    for y in full.y:
        t_, d_ = proj(model.unflatten(y))
        th.append(t_)
        dist.append(d_)
    return TaskRun(T, grid, system.values, theta0, np.array(th), dist, full, red, fam, proj)


# --------------------------------------------------------------------------- #
# the kinds
# --------------------------------------------------------------------------- #
@check_kind("theta", suite="task", requires=("task_model",))
def check_theta(ctx):
    """Family coordinates: projected full flow vs reduced flow (per coordinate in detail).

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    run = task_run(ctx)
    per = run.projector.deviations(run.theta, run.reduced.y)
    ctx.add("theta", max(per.values()), ctx.tolerances["theta"], **per)


@check_kind("observables", suite="task", requires=("task_model", "observables"))
def check_observables(ctx):
    """The engine's closed ODE of the observables vs the observables of the full flow.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    run = task_run(ctx)
    o = ctx.options
    osys, obs_of = run.family.observables
    o_red = _reduced(ctx, osys, obs_of(run.theta0, run.values)).integrate(
        (0.0, run.T), run.grid, rtol=o["rtol"], atol=o["atol"])
    o_full = np.array([obs_of(t_, run.values) for t_ in run.theta])
    if o_red.status != 0 or o_red.y.shape != o_full.shape:
        ctx.add("observables", math.nan, 0.0, message=o_red.message)
        return
    scale = np.max(np.abs(o_red.y), axis=0)
    per = {nm: float(np.max(np.abs(o_full[:, i] - o_red.y[:, i])) / scale[i])
           for i, nm in enumerate(osys.names)}
    ctx.add("observables", max(per.values()), ctx.tolerances["observables"], **per)


@check_kind("loss", suite="task", requires=("task_model",))
def check_loss(ctx):
    """Loss along the grid: full vs reduced.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    run = task_run(ctx)
    ctx.add("loss", rel_dev(run.full.loss, run.reduced.loss), ctx.tolerances["loss"])


@check_kind("alpha", suite="task", requires=("task_model",))
def check_alpha(ctx):
    """Attention on the relevant tokens along the grid: full vs reduced.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    run = task_run(ctx)
    ctx.add("alpha", rel_dev(run.full.alpha, run.reduced.alpha), ctx.tolerances["alpha"])


@check_kind("distance", suite="task", requires=("task_model",))
def check_distance(ctx):
    """Relative Frobenius distance of the full matrices from the family.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    run = task_run(ctx)
    ctx.add("distance", float(max(run.distance)), ctx.tolerances["distance"])


@check_kind("loss_at_T", suite="task", requires=("task_model",))
def check_loss_at_T(ctx):
    """Full-model loss at T relative to the target.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    run = task_run(ctx)
    target = ctx.options["target_loss"]
    ctx.add("loss at T", abs(float(run.full.loss[-1]) - target) / target,
            ctx.tolerances["loss at T"], T=run.T)
