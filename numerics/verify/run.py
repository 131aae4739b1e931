"""Running the registered kinds of check: the settings, the groups, the skips."""
from __future__ import annotations

import math
from dataclasses import dataclass

from derivations.core.vocabulary import PAPER_SETTING, PARAMETERIZATIONS, check_classes, check_positive

from . import paper_kinds, task_kinds  # noqa: F401  (register the kinds)
from ..validation import check_in_range, check_int, shown_number
from .group import run_group
from .records import Check, Checks
from .registry import KINDS, missing_capability, suite_kinds

__all__ = ["run_checks", "plan_checks", "run_plan", "Plan", "check_ratios", "check_settings", "check_task",
           "ArgumentError", "TASK_DEFAULT_M", "DEFAULT_PARAMS", "DEFAULT_RATIOS", "DEFAULT_TOLERANCES",
           "RATIO_RANGE", "M_MAX", "TASK_M_MAX", "MAX_TOKEN_TYPES", "TARGET_LOSS_MIN", "TASK_INTEGRATION"]

DEFAULT_PARAMS = dict(PAPER_SETTING)
DEFAULT_RATIOS = (0.1, 1.0, 10.0)
#: Tolerances by check family: relative deviations of the flow comparisons
#: (``flow``), first-integral drift (``first_integral``), distance from the
#: invariant family for structured init (``distance``), accepted range of
#: the observed gradient-descent order (``order``); and those of the task
#: kinds (:data:`numerics.verify.task_kinds.TOLERANCES`).
DEFAULT_TOLERANCES = {"flow": 1e-6, "first_integral": 1e-6, "distance": 1e-9,
                      "order": (0.8, 1.2)}
#: Accepted learning-rate ratios: beyond, the full model's flow (explicit
#: DOP853 on rates 1 and r) needs more steps than a verification can afford.
RATIO_RANGE = (1e-4, 1e4)
#: Smallest target loss of each suite: below, the flows to the target are no longer
#: resolved to the checks' tolerances (the paper's reduced flow meets no loss below
#: about 1e-200 in double precision; a task's loss-at-T check misses its tolerance at 1e-8).
TARGET_LOSS_MIN = {"paper": 1e-30, "task": 1e-6}
#: Largest number of classes of the paper's model (it is integrated densely).
M_MAX = 200
#: Largest number of classes of a task's full matrix model.
TASK_M_MAX = 30
#: The number of classes a task is verified at, with ``quick`` and without, unless given or the task's
#: own default differs from the paper's M = 20 (which every built-in task keeps: its explicit full model
#: at M = 20 is slow).
TASK_DEFAULT_M = {True: 3, False: 4}
#: Integration of the task kinds' flows: comparison grid points and tolerances.
TASK_INTEGRATION = {"n_times": 24, "rtol": 1e-11, "atol": 1e-13}
#: Largest number of token types of a task's explicit full model (its matrices
#: are (types x types) and a flow step holds a dozen copies of them).
MAX_TOKEN_TYPES = 400


class ArgumentError(ValueError):
    """A ``ValueError`` about one argument of :func:`plan_checks`, which ``argument`` names
    (``"task"``; ``"params"``: a model or task parameter; ``"kinds"``; ``"target_loss"``), so that
    a command line can name its option instead.

    Parameters
    ----------
    argument : str
        The argument the message is about.
    message : str
        The message, in the API's terms (keyword arguments, not options).
    """

    def __init__(self, argument, message):
        super().__init__(message)
        self.argument = argument


# --------------------------------------------------------------------------- #
# input checks
# --------------------------------------------------------------------------- #
def check_ratios(ratios):
    """The learning-rate ratios, checked.

    Parameters
    ----------
    ratios : iterable of float
        Learning-rate ratios eta_QK / eta_OV, each finite and in :data:`RATIO_RANGE`.

    Returns
    -------
    tuple of float

    Raises
    ------
    ValueError
        No ratio, or one outside :data:`RATIO_RANGE`.
    """
    ratios = tuple(ratios)
    if not ratios:
        raise ValueError("ratios must not be empty")
    return tuple(check_in_range("ratios", ratios, *RATIO_RANGE, "(beyond, the full model's flow cannot be "
                                "integrated in bounded time)").tolist())


def _check_parameterizations(parameterizations):
    if isinstance(parameterizations, str):
        parameterizations = PARAMETERIZATIONS if parameterizations == "all" \
            else (parameterizations,)
    parameterizations = tuple(parameterizations)
    for P in parameterizations:
        if P not in PARAMETERIZATIONS:
            raise ValueError(f"parameterization must be one of {PARAMETERIZATIONS} or 'all', "
                             f"got {P!r}")
    if not parameterizations:
        raise ValueError("no parameterization given")
    return parameterizations


def _check_kinds(kinds, task, parameterizations):
    """The kinds, known, each once, at least one of which checks the subject in one of the
    parameterizations (else an ArgumentError naming the kinds the subject has)."""
    kinds = suite_kinds("paper" if task is None else "task") if kinds is None else tuple(dict.fromkeys(kinds))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ArgumentError("kinds", f"kinds must be a non-empty subset of {list(KINDS)}; got {kinds!r}")

    def runs(kind):
        return any(missing_capability(kind, task, P) is None for P in parameterizations)
    try:
        if any(runs(k) for k in kinds):
            return kinds
        has = [k for k in KINDS if runs(k)]
    except ValueError as exc:            # the engine could not reduce the task
        raise ArgumentError("task", str(exc)) from None
    subject = "the paper's model" if task is None else f"task {task!r}"
    why = missing_capability(kinds[0], task, parameterizations[0])
    raise ArgumentError("kinds", f"kinds must select a check of {subject}; got {','.join(kinds)} ({kinds[0]} "
                                 f"{why}); the kinds it has: {','.join(has)}")


def check_settings(m, n, b, M):
    """The paper's model parameters as a dict.

    Parameters
    ----------
    m, n, b : float
        Each in the closed forms' range
        (:data:`numerics.dynamics.closed_form.SUPPORTED_RANGE`, [1e-8, 1e8]).
    M : int
        At most :data:`M_MAX`.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        A value outside its rule or range.
    """
    from ..dynamics.closed_form import check_supported
    M = _check_classes(M, M_MAX, "(the full model has 6 M^2 to 7 M^2 parameters)")
    m, n, b, _ = check_supported(m, n, b, M)
    return {"m": m, "n": n, "b": b, "M": M}


def _check_classes(M, most, why, shown=""):
    """``M`` as an int in [2, ``most``], verify's cap that ``why`` explains; else a ValueError
    naming that range (``shown`` follows the value)."""
    try:
        value = check_classes(M)
    except ValueError:
        value = None
    if value is None or value > most:
        raise ValueError(f"M must be an integer in [2, {most}] {why}; got {shown_number(M)}{shown}")
    return value


def _token_types(task, values):
    """Number of token types of the task's concrete instance, without building it (a group's
    ``types`` is a SymPy expression in the task's parameters)."""
    table = task.symbols()
    subs = {table[k]: v for k, v in values.items() if k in table}
    return sum((int(values["M"]) if g.per_class else 1) * int(g.types.subs(subs))
               for g in task.groups)


def _check_reduced(task):
    """Refuse a task the symbolic engine does not reduce: this suite compares the reduced system
    with the full model, so a numeric-only task (the authors' sampled task) has nothing to compare."""
    from derivations.tasks import TASKS
    why = task.why_not_symbolic()
    if why is not None:
        reduced = [name for name, t in TASKS.items() if t.why_not_symbolic() is None]
        raise ArgumentError("task", f"task {task.name!r} is numeric only: it has no symbolic engine task "
                                    f"({why.split(': ', 1)[-1]}), so it cannot be verified by this suite, "
                                    "which checks a task's reduced system against its full matrix model; "
                                    f"verifiable: {', '.join(reduced)}, or a task file the engine reduces")


def check_task(task_name, params, *, quick=False):
    """The parameter values of an engine task's full-model check.

    The task must be one the engine reduces; ``params`` (``M`` and the task's
    own; those not given take the task's defaults, ``M`` the task's own default
    where it differs from the paper's M = 20, else :data:`TASK_DEFAULT_M`) must
    be valid, ``m``, ``n``, ``b`` within the range the reduced flow is tested on
    (:data:`numerics.dynamics.state.REDUCED_FLOW_RANGE`: outside it the flows
    overflow or creep, e.g. ``b = 1e300`` never reached the target), ``M`` an integer in [2, :data:`TASK_M_MAX`] and the instance at most
    :data:`MAX_TOKEN_TYPES` token types (refused before anything is built).

    Parameters
    ----------
    task_name : str
    params : dict
    quick : bool, optional
        Picks the default M of :data:`TASK_DEFAULT_M`.

    Returns
    -------
    dict
        Every parameter's value.

    Raises
    ------
    ArgumentError
        Otherwise (a ``ValueError``; the message names what, and its ``argument`` is ``"task"``
        or ``"params"``; a value the task file sets, not given in ``params``, is ``"task"``'s, named
        by the file's key: ``"<path>: defaults.n: n must be ..."``).
    """
    from derivations.engine.task_file import default_key
    from derivations.tasks import get_task

    from ..dynamics.state import REDUCED_FLOW_RANGE
    from ..dynamics.task_systems import task_parameters
    try:
        task = get_task(task_name)
    except ValueError as exc:
        raise ArgumentError("task", str(exc)) from None
    _check_reduced(task)
    own = dict(task.defaults)["M"]
    default = own if own != PAPER_SETTING["M"] else TASK_DEFAULT_M[bool(quick)]
    key = "M"       # the parameter checked: where the caller does not give it, a task file may set it
    try:
        M = _check_classes(params.get("M", default), TASK_M_MAX,
                           "for the full-model check (its matrices are T x T, T the task's token types, "
                           "which grow with M)",
                           "" if "M" in params else " (the task's default)")
        key = None
        values = task_parameters(task_name, **{**params, "M": M})
        for key in ("m", "n", "b"):
            check_in_range(key, values[key], *REDUCED_FLOW_RANGE[key],
                           f"for the reduced flow of task {task.name!r} that the checks compare with "
                           "(the range it is tested on)")
    except ValueError as exc:
        where = None if key in params else default_key(task, key)    # "<path>: defaults.n"
        raise (ArgumentError("params", str(exc)) if where is None else
               ArgumentError("task", f"{where}: {exc}")) from None
    types = _token_types(task, values)
    if types > MAX_TOKEN_TYPES:
        raise ArgumentError("params", f"the explicit full model of task {task.name!r} would have {types} "
                                      f"token types (matrices {types} x {types}); the limit is "
                                      f"{MAX_TOKEN_TYPES}")
    return values


def _target_loss(target_loss, quick, task, settings, kinds):
    """The target loss (default by suite), in the range every selected kind can reach."""
    if target_loss is None:
        target_loss = (0.1 if quick else 0.01) if task is None else (0.3 if quick else 0.1)
    target_loss = float(target_loss)
    logM = math.log(settings["M"])
    if any(KINDS[k].suite == "paper" for k in kinds) and task is None:
        lo, hi, shown = TARGET_LOSS_MIN["paper"], logM - 0.2, "log M - 0.2"
    else:
        lo, hi, shown = TARGET_LOSS_MIN["task"], logM, "log M"
    if not (math.isfinite(target_loss) and lo <= target_loss < hi):
        raise ArgumentError("target_loss", f"target_loss must be in [{lo:g}, {shown}) = [{lo:g}, {hi:.6g}) "
                                           f"(the range the checks are verified on); got {target_loss!r}")
    return target_loss


def _tolerances(tolerances):
    tol = {**DEFAULT_TOLERANCES, **task_kinds.TOLERANCES}
    if tolerances:
        unknown = set(tolerances) - set(tol)
        if unknown:
            raise ValueError(f"unknown tolerance keys {sorted(unknown)}; valid: {sorted(tol)}")
        tol.update(tolerances)
    return tol


def _options(quick, eps, random_scale, target_loss, thresholds, logM, task_eps):
    eps, random_scale, task_eps = (check_positive(name, v) for name, v in (
        ("eps", eps), ("random_scale", random_scale), ("task_eps", task_eps)))
    if thresholds is None:
        thresholds = (1.0, 0.3) if quick else (1.0, 0.3, 0.1)
    thresholds = tuple(float(x) for x in thresholds if target_loss < float(x) < logM)
    return {"eps": float(eps), "random_scale": float(random_scale),
            "target_loss": float(target_loss), "thresholds": thresholds,
            "n_t": 12 if quick else 40, "decades": 1.0 if quick else 4.0,
            "random": not quick,
            "gd_steps": (500, 1000) if quick else (1000, 2000, 4000),
            "task_eps": float(task_eps), **TASK_INTEGRATION}


def _task_integration(given) -> dict:
    """The task flows' integration options given (:data:`TASK_INTEGRATION`'s keys), checked."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(TASK_INTEGRATION))
    if unknown:
        raise ValueError(f"task_integration takes {', '.join(TASK_INTEGRATION)}; got {unknown}")
    least = {"n_times": 2}
    return {k: check_int(f"task_integration[{k!r}]", v, least[k]) if k in least
            else check_positive(f"task_integration[{k!r}]", v) for k, v in given.items()}


def _subject_settings(task, quick, m, n, b, M, params):
    """``m, n, b, M`` (and a task's own parameters) of the subject verified."""
    given = {k: v for k, v in dict(m=m, n=n, b=b, M=M).items() if v is not None}
    if task is None:
        if params:
            raise ArgumentError("params", f"the paper's model has no parameter {sorted(params)[0]!r} "
                                          "(parameters: m, n, b, M; a task's own parameters, such as n_c, "
                                          "need task=NAME)")
        return check_settings(**{**DEFAULT_PARAMS, **given})
    return check_task(task, {**given, **params}, quick=quick)


# --------------------------------------------------------------------------- #
# running
# --------------------------------------------------------------------------- #
def run_checks(parameterizations=PARAMETERIZATIONS, ratios=None, *, state_at_loss=None,
               progress=None, **options) -> Checks:
    r"""Run the verification and return the list of :class:`Check` records.

    The keywords other than ``state_at_loss`` and ``progress`` go to
    :func:`plan_checks`, which validates them all before anything runs.

    Parameters
    ----------
    parameterizations : str or iterable of str
        Any of ``"CACO", "CAFO", "FACO", "FAFO"`` (or ``"all"``).
    ratios : iterable of float, optional
        Learning-rate ratios r = eta_QK / eta_OV (eta_OV = 1), each in
        :data:`RATIO_RANGE`. Default (0.1, 1, 10), or (1,) when ``quick``.
    m, n, b, M : float
        Model parameters (the paper's values by default; with a
        task, the task's defaults, but M = 4, or 3 when ``quick``, where the
        task's default M is the paper's 20: :data:`TASK_DEFAULT_M`).
    quick : bool
        Coarser grid (12 points on [T/10, T] instead of 40 on
        [1e-4 T, T]), target loss 0.1 (task: 0.3), thresholds (1, 0.3), two
        GD step sizes (one order), no random-init run.
    eps : float
        Scale of the structured initialization of the paper's factorized circuits.
    random_scale : float
        Standard deviation of the random initialization (reported only).
    target_loss : float, optional
        Loss at which the trajectory comparison ends (default 0.01, quick 0.1;
        task: 0.1, quick 0.3).
    thresholds : iterable of float, optional
        Loss levels whose crossing states are compared (default (1, 0.3, 0.1),
        quick (1, 0.3)); levels not in (target_loss, log M) are dropped.
    tolerances : dict, optional
        Overrides of :data:`DEFAULT_TOLERANCES` (keys ``flow``,
        ``first_integral``, ``distance``, ``order``) and of the task kinds'
        tolerances.
    state_at_loss : callable, optional
        Replacement of :func:`numerics.dynamics.closed_form.state_at_loss` (to show
        that a wrong closed form is detected).
    progress : callable, optional
        Called with a short string before each group.
    kinds : iterable of str, optional
        Which kinds of check to run (keys of :data:`KINDS`, each run once; default the
        paper's suite, or the task suite with ``task``). A kind whose
        capability the subject lacks is skipped; the reason is in the
        result's ``skipped``. Kinds none of which checks the subject in the
        parameterizations given are refused.
    task : str, optional
        An engine task (:mod:`derivations.tasks`) to verify instead of the
        paper's model.
    task_eps : float
        Scale of the structured factor initialization of a task's full model.
    task_integration : dict, optional
        ``n_times`` (grid points), ``rtol``, ``atol`` of the task kinds' flows; defaults
        :data:`TASK_INTEGRATION`.
    max_steps : int, optional
        The full model's solver budget in steps, >= 1 (default the solver's,
        :data:`numerics.dynamics.bounded_ivp.DEFAULT_MAX_STEPS`); a full flow that spends it
        has compared nothing and its record is not verifiable.
    **params
        A task's own parameters (e.g. ``n_c``).

    Returns
    -------
    Checks
        A list of :class:`Check`. An unexpected exception in one group is
        recorded as a failing check (quantity ``"error: ..."``) and the other
        groups still run.

    Raises
    ------
    ValueError
        Invalid arguments.
    """
    plan = plan_checks(parameterizations, ratios, **options)
    return run_plan(plan, state_at_loss=state_at_loss, progress=progress)


@dataclass(frozen=True)
class Plan:
    """A validated run: what :func:`run_plan` runs (see :func:`run_checks`)."""

    task: str | None
    settings: dict
    parameterizations: tuple
    ratios: tuple
    kinds: tuple
    options: dict
    tolerances: dict

    @property
    def groups(self):
        """The (parameterization, ratio) groups, in the order they run."""
        return [(P, r) for P in self.parameterizations for r in self.ratios]


def plan_checks(parameterizations=PARAMETERIZATIONS, ratios=None, *, m=None, n=None, b=None,
                M=None, quick=False, eps=1e-2, random_scale=1e-3, target_loss=None,
                thresholds=None, tolerances=None, kinds=None, task=None, task_eps=0.1,
                task_integration=None, max_steps=None, **params) -> Plan:
    """The checks :func:`run_checks` would run, validated, without running anything.

    Parameters
    ----------
    parameterizations, ratios, m, n, b, M, quick, eps, random_scale, target_loss, thresholds, \
tolerances, kinds, task, task_eps, task_integration, max_steps, **params
        As :func:`run_checks`.

    Returns
    -------
    Plan

    Raises
    ------
    ValueError
        An invalid argument (the message names it; an :class:`ArgumentError` says which argument).
    """
    settings = _subject_settings(task, quick, m, n, b, M, params)
    parameterizations = _check_parameterizations(parameterizations)
    ratios = check_ratios(((1.0,) if quick else DEFAULT_RATIOS) if ratios is None else ratios)
    kinds = _check_kinds(kinds, task, parameterizations)
    target_loss = _target_loss(target_loss, quick, task, settings, kinds)
    opts = _options(quick, eps, random_scale, target_loss, thresholds,
                    math.log(settings["M"]), task_eps)
    opts.update(_task_integration(task_integration))
    opts["max_steps"] = None if max_steps is None else check_int("max_steps", max_steps, 1)
    return Plan(task, settings, parameterizations, ratios, kinds, opts, _tolerances(tolerances))


def run_plan(plan: Plan, *, state_at_loss=None, progress=None) -> Checks:
    """Run every (parameterization, ratio) group of a plan.

    An exception in a group is recorded as a failing check and the other
    groups still run.

    Parameters
    ----------
    plan : Plan
        From :func:`plan_checks`.
    state_at_loss : callable, optional
        Replaces the paper's closed form (CACO), called as
        ``f(loss, ratio, m=, n=, b=, M=)``.
    progress : callable, optional
        Called with a label before each group.

    Returns
    -------
    Checks
    """
    out = Checks()
    for P, r in plan.groups:
        if progress is not None:
            progress(f"{P} r={r:g}")
        try:
            checks, skipped = run_group(P, r, plan.settings, plan.options, plan.tolerances,
                                        plan.kinds, state_at_loss=state_at_loss, task=plan.task)
        except Exception as exc:  # noqa: BLE001 - recorded as a failing check
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            out.append(Check(P, r, f"error: {msg}", math.nan, plan.tolerances["flow"],
                             task=plan.task))
            continue
        out.extend(checks)
        for kind, reason in skipped:
            entry = {"parameterization": P, "kind": kind, "reason": reason}
            if entry not in out.skipped:
                out.skipped.append(entry)
    return out
