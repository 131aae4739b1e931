"""What the checks of one (subject, parameterization, ratio) group share."""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from .records import NOT_VERIFIABLE, Check

__all__ = ["Context", "Missing"]

# integration settings of the paper's model (tight: the comparisons then agree to ~1e-11)
FULL_RTOL, FULL_ATOL = 1e-12, 1e-16
#: The full flow's tolerances when a failing comparison is measured again
#: (:func:`numerics.verify.group.run_group`); rtol near DOP853's floor (100 x machine epsilon).
#: A task's flows are measured again at a tenth of its ``rtol`` (not below FINE_RTOL) and a
#: hundredth of its ``atol``.
FINE_RTOL, FINE_ATOL = 1e-13, 1e-22
RED_RTOL, RED_ATOL = 1e-13, 1e-20
#: The largest argument of exp that doubles hold (log of the largest double, 709.78).
EXP_MAX = math.log(np.finfo(float).max)


class Missing(Exception):
    """A prerequisite of a check could not be computed (already recorded)."""


#: Why a flow stops short that is its solver's budget, not the flow: the steps or the
#: evaluations allowed are spent (:attr:`numerics.dynamics.Trajectory.reason`).
BUDGET = ("steps", "nfev")


class Context:
    """What the checks of one (parameterization, ratio) group share.

    The expensive pieces (the reduced and full flows on the comparison grid)
    are computed on first use and cached; a prerequisite that fails is
    recorded once as a failing check and the checks needing it are skipped.

    Parameters
    ----------
    parameterization : str
    ratio : float
        The learning-rate ratio eta_QK / eta_OV.
    settings, options, tolerances : dict
        As the attributes below.
    state_at_loss : callable, optional
        Replacement of :func:`numerics.dynamics.closed_form.state_at_loss` in CACO (to show that a
        wrong closed form is detected).
    task : str, optional
        The engine task verified (default the paper's model).

    Attributes
    ----------
    task : str or None
        The engine task verified, or None for the paper's model.
    parameterization : str
    ratio : float
    settings : dict
        The parameter values: ``m, n, b, M`` (and a task's own, e.g. ``n_c``).
    options : dict
        Run options (grid, thresholds, GD step counts, ...).
    tolerances : dict
    system : numerics.dynamics.reduced_system.ReducedSystem
        The paper's reduced system: balanced rates eta_OV = 1, eta_QK = ratio,
        paper initialization (paper kinds only; built on first use).
    model : numerics.model.paper.AttentionModel
        The paper's full model (paper kinds only).
    p0 : dict
        Structured initialization of the paper's full model.
    checks : list[Check]
    full_tolerances : (float, float)
        ``(rtol, atol)`` of the full model's flow.
    read_full_flow : bool
        Whether :attr:`flows` was read since it was last set False (which
        records measure the full flow).
    """

    def __init__(self, parameterization, ratio, settings, options, tolerances,
                 state_at_loss=None, task=None):
        self.task = task
        self.parameterization, self.ratio = parameterization, float(ratio)
        self.settings, self.options, self.tolerances = settings, options, tolerances
        self.state_at_loss_override = state_at_loss
        self.checks = []
        self._cache = {}
        self.full_tolerances = (FULL_RTOL, FULL_ATOL)
        self.read_full_flow = False

    def with_fine_full_flow(self):
        """A context of the same group, with no records, whose full flow is integrated with
        ``FINE_RTOL``, ``FINE_ATOL`` (a task's flows: at a tenth of its ``rtol``, not
        below FINE_RTOL, and a hundredth of its ``atol``); everything else computed so far is shared.

        Returns
        -------
        Context
        """
        o = self.options
        options = {**o, "rtol": max(o["rtol"] / 10, FINE_RTOL), "atol": o["atol"] / 100}
        fine = Context(self.parameterization, self.ratio, self.settings, options,
                       self.tolerances, self.state_at_loss_override, task=self.task)
        fine._cache = {k: v for k, v in self._cache.items() if k not in ("flows", "task_run")}
        fine.__dict__.update({k: self.__dict__[k] for k in ("system", "model", "p0") if k in self.__dict__})
        fine.full_tolerances = (FINE_RTOL, FINE_ATOL)
        return fine

    def add(self, quantity, value, tolerance, **detail):
        """Record one check.

        Parameters
        ----------
        quantity : str
            What is compared.
        value : float
            The measured deviation.
        tolerance : float, (float, float), None or NOT_VERIFIABLE
            As :class:`~numerics.verify.records.Check`'s.
        **detail
            Stored with the record.
        """
        self.checks.append(Check(self.parameterization, self.ratio, quantity, float(value),
                                 tolerance, detail, task=self.task))

    def once(self, key, compute):
        """``compute()`` on first use, cached; a :class:`Missing` prerequisite stays missing.

        Parameters
        ----------
        key : hashable
        compute : callable

        Returns
        -------
        object
            What ``compute()`` returned.

        Raises
        ------
        Missing
            ``compute`` raised it, now or on an earlier call.
        """
        if key not in self._cache:
            try:
                self._cache[key] = compute()
            except Missing:
                self._cache[key] = None
                raise
        if self._cache[key] is None:
            raise Missing(key)
        return self._cache[key]

    # ----------------------------------------------------------------- paper's model
    @property
    def paper_settings(self):
        """``m, n, b, M`` of the paper's model."""
        return {k: self.settings[k] for k in ("m", "n", "b", "M")}

    @property
    def rates(self):
        return dict(eta_QK=self.ratio, eta_OV=1.0)

    @cached_property
    def system(self):
        from ..dynamics.reduced_system import ReducedSystem
        return ReducedSystem(self.parameterization, **self.paper_settings, **self.rates,
                             eps=self.options["eps"])

    @cached_property
    def model(self):
        from ..model.paper import AttentionModel
        return AttentionModel(self.parameterization, **self.paper_settings, **self.rates)

    @cached_property
    def p0(self):
        from ..model.family import structured_params
        return structured_params(self.model, eps=self.options["eps"])

    def reduced(self, **kw):
        """Reduced flow with the verification tolerances.

        Parameters
        ----------
        **kw
            Passed to :meth:`numerics.dynamics.ReducedSystem.integrate` (``rtol``, ``atol`` are the verification's).

        Returns
        -------
        numerics.dynamics.Trajectory
        """
        return self.system.integrate(rtol=RED_RTOL, atol=RED_ATOL, **kw)

    @property
    def flow_tolerances(self):
        """``(rtol, atol)`` the full model's flow is integrated with (a task's: its options')."""
        return self.full_tolerances if self.task is None else (self.options["rtol"], self.options["atol"])

    @property
    def budget(self):
        """The full model's solver budget in steps: the ``max_steps`` option, or the solver's
        default (:data:`numerics.dynamics.bounded_ivp.DEFAULT_MAX_STEPS`)."""
        from ..dynamics.bounded_ivp import DEFAULT_MAX_STEPS
        return self.options.get("max_steps") or DEFAULT_MAX_STEPS

    def record_stopped(self, quantity, flows, full_flow, tolerance, **detail):
        """Record the flows that stopped short, if any, and raise :class:`Missing`.

        The full model's flow is the independent computation the reduction is checked
        against; at small ``m`` it is stiff, and an explicit solver spends its step budget
        (:attr:`budget`) before the end (``verify --task shared-irrelevant --params m=0.01``:
        CAFO). When that is all that happened, nothing was compared: not verifiable (N/V),
        saying so. Anything else is a failure, with ``tolerance``: a flow whose values became
        non-finite or whose solver failed, and a reduced flow that stops at all (two to four
        coordinates, integrated with their Jacobian: what is verified).

        Parameters
        ----------
        quantity : str
            The record's quantity.
        flows : list of (str, numerics.dynamics.Trajectory, bool)
            Each flow with its name and whether it reached the end.
        full_flow : numerics.dynamics.Trajectory
            The full model's flow.
        tolerance : float
            The record's tolerance when it fails (its value, nan, fails any).
        **detail
            Stored with the record, after its message (each flow's name and why it stopped).

        Raises
        ------
        Missing
            A flow stopped short (recorded).
        """
        stopped = [(name, run) for name, run, ok in flows if not ok]
        if not stopped:
            return
        message = "; ".join(f"{name}: {run.message}" for name, run in stopped)
        if all(run is full_flow and getattr(run, "reason", None) in BUDGET for _, run in stopped):
            tolerance, message = NOT_VERIFIABLE, (
                f"{message} (the full model's flow spent its solver's budget before the end: nothing to "
                f"compare, so not verifiable here; a larger budget: --max-steps {2 * self.budget})")
        self.add(quantity, math.nan, tolerance, message=message, **detail)
        raise Missing(quantity)

    def unreached(self, loss, red, tolerance):
        """Record that the reduced flow ``red`` did not reach ``loss``: not verifiable when its
        start is beyond what doubles evaluate (a coordinate above ``EXP_MAX``, where the
        right-hand side's exponentials overflow), else failing with the tolerance ``tolerance``.

        Parameters
        ----------
        loss : float
        red : numerics.dynamics.Trajectory
            The reduced flow's run to ``loss``.
        tolerance : float or (float, float)
            The tolerance of the check that needed it.
        """
        beyond = [f"{k} = {v:.4g}" for k, v in zip(self.system.names, self.system.mu0) if abs(v) > EXP_MAX]
        message = str(red.message)
        if beyond and red.t.size <= 1:
            tolerance, message = NOT_VERIFIABLE, (
                f"the start ({', '.join(beyond)}) is beyond what doubles evaluate: exp overflows above "
                f"{EXP_MAX:.2f} ({message})")
        self.add(f"reduced flow reaches loss {loss:g}", math.nan, tolerance, message=message)

    @property
    def horizon(self):
        """``(T, grid)``: time T at which the reduced flow reaches the target
        loss, and the log-spaced comparison grid on [10^-decades T, T]."""
        def compute():
            target = self.options["target_loss"]
            red = self.reduced(target_loss=target)
            if red.status != 1:
                self.unreached(target, red, self.tolerances["flow"])
                raise Missing("horizon")
            T = float(red.t[-1])
            grid = np.logspace(math.log10(T) - self.options["decades"], math.log10(T),
                               self.options["n_t"])
            grid[-1] = T
            return T, grid
        return self.once("horizon", compute)

    @property
    def flows(self):
        """``(full, reduced)`` trajectories on the grid, with the loss thresholds."""
        def compute():
            from ..dynamics.training import gradient_flow
            T, grid = self.horizon
            thr = self.options["thresholds"]
            rtol, atol = self.full_tolerances
            budget = self.budget
            full = gradient_flow(self.model, self.p0, grid, t_span=(0.0, T), rtol=rtol,
                                 atol=atol, loss_thresholds=thr, max_steps=budget)
            red = self.reduced(t_eval=grid, t_span=(0.0, T), loss_thresholds=thr)
            self.record_stopped("flow integration", [(name, run, run.status == 0 and run.t.shape == grid.shape)
                                                     for name, run in (("full", full), ("reduced", red))],
                                full, self.tolerances["flow"], full=str(full.message), reduced=str(red.message))
            return full, red
        self.read_full_flow = True
        return self.once("flows", compute)

    def closed_state(self, loss):
        """:meth:`ReducedSystem.state_at_loss
        <numerics.dynamics.paper_closed_forms.PaperClosedForms.state_at_loss>`, or the injected replacement
        (CACO, called as ``f(loss, ratio, m=, n=, b=, M=)``).

        Parameters
        ----------
        loss : float or array_like

        Returns
        -------
        numerics.dynamics.StateAtLoss
        """
        f = self.state_at_loss_override
        if f is None or self.parameterization != "CACO":
            return self.system.state_at_loss(loss)
        return f(loss, self.ratio, **self.paper_settings)
