r"""End-to-end verification: full model vs reduced ODE vs closed forms.

``python -m numerics.verify`` runs, for every parameterization (CACO, CAFO,
FACO, FAFO) and every learning-rate ratio :math:`r = \eta_{QK}/\eta_{OV}`
(:math:`\eta_{OV} = 1`, factor rates equal to their circuit rate, i.e.
balanced factors), in the paper setting :math:`m=5, n=50, b=50, M=20`:

1. **Flow comparisons** (relative tolerance ``1e-6``).  The full-model
   gradient flow (:func:`numerics.dynamics.training.gradient_flow`, structured
   initialization, factor scale ``eps = 1e-2``) is sampled on a common,
   log-spaced time grid :math:`t \in [10^{-4}T, T]`, where :math:`T` is the
   time at which the reduced flow reaches the target loss (default 0.01).
   On the grid, the maximum pointwise relative deviation
   :math:`\max_t |x(t) - x_{\rm ref}(t)|/|x_{\rm ref}(t)|` of
   :math:`\mu_{OV}, \mu_{QK}, \alpha` is reported

   * against the reduced ODE (:func:`numerics.dynamics.reduced_ode.solve_reduced`),
   * against the closed forms.  CACO: :func:`numerics.dynamics.closed_form.state_at_loss`
     at the full-model *loss* of each grid point.  The others: the
     (explicit or implicit) orbit through the initial point
     (:meth:`ReducedSystem.orbit <numerics.dynamics.reduced_system.ReducedSystem.orbit>`)
     gives :math:`\mu_{QK}` and :math:`\alpha` at the full-model
     :math:`\mu_{OV}`, and :math:`\mu_{OV}` is compared with the
     intersection of the orbit with the margin :math:`\alpha\mu_{OV} = s(L)`
     at the full-model loss
     (:meth:`ReducedSystem.state_at_loss <numerics.dynamics.reduced_system.ReducedSystem.state_at_loss>`).  (Going through the
     loss costs digits while the loss is within :math:`10^{-6}` of
     :math:`\log M`: :math:`s` then carries a relative error of about
     :math:`10^{-16}/(\log M - L)`, which is why the margin+orbit
     :math:`\mu_{OV}` rows of CAFO/FAFO show about :math:`10^{-9}`.)

   the relative drift of the first integral
   (:meth:`ReducedSystem.first_integral <numerics.dynamics.reduced_system.ReducedSystem.first_integral>`) along the full-model
   trajectory, :math:`\max_t |H(t) - H(0)| / \max(S(t), S(0))` with S the
   sum of the absolute values of H's terms (the scale on which H cancels); and the
   states :math:`(t, \mu_{OV}, \mu_{QK}, \alpha)` where the loss crosses the
   thresholds (default 1, 0.3, 0.1): full-flow events vs
   :func:`~numerics.dynamics.closed_form.state_at_loss` and
   :func:`~numerics.dynamics.closed_form.time_to_loss` (CACO) or vs the reduced
   flow's events (the others).

2. **Invariant family.**  The relative distance of the full-model circuits
   from the family (``distance`` of :func:`numerics.model.family.summarize`) stays below
   ``1e-9`` along the structured-init trajectory (checked). Beyond it, the
   growth factor G of a departure from the family over [0, T] is measured: a
   distance within what round-off alone reaches (machine epsilon per step,
   multiplied by max(G, 1)) is not verifiable; at m = 1e-6 the family repels
   (FAFO: G about 5e6) and the distance 5.3e-9 is within that reach (2e-7). From a random
   initialization (entries :math:`\mathcal N(0, 10^{-6})`) the distance at
   :math:`T` is only reported.

3. **Gradient descent -> flow.**  Gradient descent with step
   :math:`\mathrm{lr} = T_h/N` (:math:`N` = 1000, 2000, 4000 steps, where
   :math:`T_h` is the time the reduced loss needs to fall to
   :math:`\log M - 0.2`; for a factorized QK circuit N is multiplied by
   :math:`\lceil r/10\rceil` when r > 10, as its growth rate scales with r) is compared with the flow at five common times;
   the maximal pointwise relative error in :math:`(\mu_{OV}, \mu_{QK})`
   must halve with lr: observed orders :math:`\log_2(e_{N}/e_{2N})` in
   :math:`[0.8, 1.2]`.  While an order is off and the runs are not yet first
   order (the coarse run's relative error exceeds :data:`ASYMPTOTIC_ERROR`, or
   the error falls faster than first order: at b = 1e-4 the quick check's 500
   and 1000 steps give order 2.8, 1000 and 2000 give 0.99), the step
   counts are doubled (within :data:`MAX_DESCENT_STEPS`); when the counts
   would exceed the budget, or the runs stay out of the first-order regime
   (e.g. m = 1e-6), the check is reported as not verifiable (status
   ``N/V``), not as an order.

A comparison with the full-model flow (kinds ``flow``, ``closed_form``,
``first_integral``, ``crossings``, ``family``) that fails is measured once
more on the full flow integrated with rtol ``1e-13``, atol ``1e-22``
instead of ``1e-12``, ``1e-16`` (:func:`numerics.verify.group.run_group`):
passing there, it passes; still failing but changed by at least a third
(1/:data:`INTEGRATION_LIMITED`) of its new value, it has not converged in
the integration, which and not the theory limits it: not verifiable
(``N/V``); otherwise it fails. Both values are in its ``detail``. At
m = 1e-6 (``T`` about 5e10), for example, FAFO's ``flow~reduced mu_QK``
falls from 5.7e-6 to 8.1e-8 and passes, its ``alpha`` from 8.0e-5 to
1.1e-6 (N/V). A task's comparisons (``--task``) are measured
again the same way, both flows at a tenth of the task's ``rtol`` and a
hundredth of its ``atol``. A flow that could not be computed at all is not
integrated again. When the full model's flow only spent its solver's step
budget before the end (it is stiff toward small ``m``: ``--task
shared-irrelevant --params m=0.01``, CAFO), nothing was compared, and its
record (``flow integration``, or ``integration`` for a task) is not
verifiable (``--max-steps N`` gives it a larger budget); a flow that becomes
non-finite or whose solver fails, and a reduced flow that stops at all, fail
(:meth:`numerics.verify.context.Context.record_stopped`).

With ``--task NAME`` the subject is a task of the engine
(:mod:`derivations.tasks`) instead: its reduced system against the full matrix
model of the same task, in every parameterization
(:mod:`numerics.verify.task_kinds`: kinds ``theta``, ``observables``,
``loss``, ``alpha``, ``distance``, ``loss_at_T``).

Each kind of check is a function of a :class:`Context` (the group's system,
model, initialization and lazily computed flows), registered in the one
registry :data:`KINDS` (:mod:`numerics.verify.registry`) with its suite
(the paper's kinds ``flow``, ``closed_form``, ``first_integral``,
``crossings``, ``family``, ``descent`` run by default without ``--task``,
the task kinds with it) and the capabilities it requires of the subject: a
subject without one (e.g. the closed forms or a closed ODE in the
observables) skips that kind and says why (``skipped`` in the result, the
text output and the JSON summary). Another family of checks registers more
kinds with :func:`check_kind`.

=======================================  =======================================
module                                   what
=======================================  =======================================
:mod:`numerics.verify.records`           :class:`Check`, table, JSON, summary
:mod:`numerics.verify.registry`          kinds, suites, capabilities
:mod:`numerics.verify.context`           :class:`Context` (one group)
:mod:`numerics.verify.paper_kinds`       the paper's kinds
:mod:`numerics.verify.task_kinds`        the task kinds
:mod:`numerics.verify.group`             one group, failures measured again
:mod:`numerics.verify.run`               validation, :func:`run_checks`
:mod:`numerics.verify.cli`               the command line
=======================================  =======================================

Output: a table (one row per check: parameterization, ratio, quantity,
value, tolerance, PASS/FAIL/INFO/N/V) or, with ``--json``, ``{"checks": [...],
"summary": {...}}``.  Exit status 0 when every check passes, 1 when any
fails or is not verifiable or nothing was checked (or the output cannot be
written), 2 on bad arguments or settings it cannot finish (M > 200, with
``--task`` M > 30 or more than :data:`~numerics.verify.run.MAX_TOKEN_TYPES`
token types, ratios outside :data:`RATIO_RANGE`, kinds none of which checks
the subject; one line on stderr, before any work).

The options are those of the parser :func:`build_parser` (``python -m
numerics.verify --help``; the site's command-line reference is rendered from
it). Programs can call :func:`run_checks` directly; it returns a list of
:class:`Check` records (``kinds=`` selects kinds of check).

>>> from numerics.verify import run_checks, summarize
>>> checks = run_checks("CACO", [1.0], quick=True, kinds=["flow"])
>>> [c.quantity for c in checks], summarize(checks)["ok"]
(['flow~reduced mu_OV', 'flow~reduced mu_QK', 'flow~reduced alpha'], True)
"""
from derivations.core.exports import lazy_exports

#: ``{defining module: public names}``: imported on first access, so that importing this package
#: (``python -m numerics.verify`` does, before its guard against Ctrl-C) imports no NumPy or SciPy.
_HOMES = {
    "derivations.core.vocabulary": ("PARAMETERIZATIONS",),
    ".cli": ("build_parser", "main"),
    ".context": ("Context",),
    ".paper_kinds": ("ASYMPTOTIC_ERROR", "MAX_DESCENT_REFINEMENTS", "MAX_DESCENT_STEPS", "descent_steps"),
    ".records": ("NOT_VERIFIABLE", "Check", "Checks", "format_table", "summarize"),
    ".registry": ("CAPABILITIES", "KINDS", "Kind", "capabilities", "check_kind"),
    ".run": ("DEFAULT_PARAMS", "DEFAULT_RATIOS", "DEFAULT_TOLERANCES", "MAX_TOKEN_TYPES", "RATIO_RANGE",
             "TARGET_LOSS_MIN", "TASK_INTEGRATION", "ArgumentError", "Plan", "check_ratios", "plan_checks",
             "run_checks", "run_plan"),
    ".group": ("INTEGRATION_LIMITED",),
}
_lazy_getattr, __dir__ = lazy_exports(__name__, _HOMES)


def __getattr__(name):
    """A name of ``__all__``, imported from its module on first use (:func:`lazy_exports`); the registry
    :data:`KINDS` complete, every kind registered by its module (:mod:`numerics.verify.run` imports them)."""
    if name == "KINDS":
        from . import run  # noqa: F401  (registers the paper's kinds and the task kinds)
    return _lazy_getattr(name)

__all__ = ["Check", "Checks", "ArgumentError", "run_checks", "plan_checks", "run_plan", "Plan",
           "summarize", "format_table", "main", "build_parser",
           "DEFAULT_PARAMS", "DEFAULT_RATIOS", "DEFAULT_TOLERANCES", "PARAMETERIZATIONS",
           "Context", "KINDS", "Kind", "CAPABILITIES", "capabilities",
           "check_kind", "check_ratios", "descent_steps", "RATIO_RANGE", "MAX_DESCENT_STEPS",
           "MAX_DESCENT_REFINEMENTS", "ASYMPTOTIC_ERROR", "INTEGRATION_LIMITED", "NOT_VERIFIABLE", "MAX_TOKEN_TYPES",
           "TARGET_LOSS_MIN", "TASK_INTEGRATION"]
