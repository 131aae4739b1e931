"""One (parameterization, ratio) group of checks: its kinds run once, and the failing
comparisons with the full model's flow measured again on that flow integrated more accurately."""
from __future__ import annotations

import math
from contextlib import suppress
from dataclasses import replace

from .context import Context, Missing
from .records import NOT_VERIFIABLE
from .registry import KINDS, missing_capability

__all__ = ["run_group", "INTEGRATION_LIMITED"]


def run_group(P, r, settings, options, tolerances, kinds, *, state_at_loss=None, task=None):
    """Run the kinds ``kinds`` for one (parameterization, ratio).

    Parameters
    ----------
    P : {"CACO", "CAFO", "FACO", "FAFO"}
    r : float
        The learning-rate ratio.
    settings, options, tolerances : dict
        Of :func:`~numerics.verify.run.plan_checks`.
    kinds : sequence of str
    state_at_loss : callable, optional
        A replacement of the closed-form state (CACO).
    task : str, optional
        An engine task (the task suite).

    Returns
    -------
    checks : list of Check
    skipped : list of (str, str)
        ``(kind, reason)`` of the kinds skipped.

    Notes
    -----
    A failing measurement (a finite value; a flow that could not be computed is
    not measured again) of a kind that reads the full model's flow is measured
    again on that flow integrated more accurately
    (:meth:`~numerics.verify.context.Context.with_fine_full_flow`), by
    ``_remeasure``.
    """
    ctx = Context(P, r, settings, options, tolerances, state_at_loss, task=task)
    skipped, measured_full = [], []
    for kind in kinds:
        reason = missing_capability(kind, task, P)
        if reason is not None:
            skipped.append((kind, reason))
            continue
        start, ctx.read_full_flow = len(ctx.checks), False
        with suppress(Missing):
            KINDS[kind].func(ctx)
        if ctx.read_full_flow and any(c.status == "FAIL" and math.isfinite(c.value) for c in ctx.checks[start:]):
            measured_full.append(kind)
    return (_remeasure(ctx, measured_full) if measured_full else ctx.checks), skipped


#: A failing deviation that changes by at least 1/INTEGRATION_LIMITED of its new value when
#: the full flow is integrated more accurately is not converged in that integration (N/V).
INTEGRATION_LIMITED = 3.0


def _remeasure(ctx, kinds):
    """``ctx``'s records, each failing one of ``kinds`` replaced by its measurement
    on the more accurately integrated full flow: passing there, it passes (the
    first value kept in its detail); still failing, but changed by at least
    1/:data:`INTEGRATION_LIMITED` of its new value (not converged: a deviation
    that falls threefold changes by twice its new value), it is not verifiable
    with these tolerances (the integration, not the theory, limits it); otherwise
    it fails, with the second value in its detail. When the more accurate full
    flow spends its solver's budget before the end (a stiff flow), whether the
    integration limits the failing record cannot be told: not verifiable, saying
    so. Records that pass stay as they are.
    """
    fine = ctx.with_fine_full_flow()
    for kind in kinds:
        with suppress(Missing):
            KINDS[kind].func(fine)
    again = {c.quantity: c for c in fine.checks}
    spent = next((f for f in fine.checks if f.status == "N/V" and f.quantity.endswith("integration")), None)
    out = []
    for c in ctx.checks:
        f = again.get(c.quantity)
        first = {"value_at_default_tolerances": c.value, "full_flow_tolerances": list(fine.flow_tolerances)}
        if c.status == "FAIL" and f is None and spent is not None and math.isfinite(c.value):
            out.append(replace(c, tolerance=NOT_VERIFIABLE, detail={**c.detail, **first, "message": (
                f"{c.value:.2e} at rtol {ctx.flow_tolerances[0]:g}, above the tolerance {c.tolerance}; at rtol "
                f"{fine.flow_tolerances[0]:g} the full flow spent its solver's budget before the end, so whether "
                f"the integration limits it is not known ({spent.detail['message']})")}))
        elif c.status != "FAIL" or f is None or isinstance(f.tolerance, str):
            out.append(c)
        elif f.status == "PASS":
            out.append(replace(f, detail={**f.detail, **first}))
        elif math.isfinite(f.value) and math.isfinite(c.value) and \
                abs(c.value - f.value) * INTEGRATION_LIMITED >= f.value:
            out.append(replace(f, tolerance=NOT_VERIFIABLE, detail={**f.detail, **first, "message": (
                f"limited by the full flow's integration: {c.value:.2e} at rtol {ctx.flow_tolerances[0]:g}, "
                f"{f.value:.2e} at rtol {fine.flow_tolerances[0]:g} (not converged), tolerance {c.tolerance}")}))
        else:
            out.append(replace(c, detail={**c.detail, "value_with_fine_full_flow": f.value}))
    return out
