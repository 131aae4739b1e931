"""numerics.verify.group's measurement again on the finer full flow, with stand-in check kinds: a failure
stays a failure unless the finer flow passes it or shows the integration limits it."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from numerics.verify import group
from numerics.verify.records import NOT_VERIFIABLE, Check
from numerics.verify.registry import Kind


def _ctx(value, tolerance=1e-6):
    return SimpleNamespace(checks=[Check("CACO", 1.0, "q", value, tolerance)], flow_tolerances=(1e-12, 1e-14))


@pytest.mark.parametrize("fine_value, fine_tolerance, status", [
    (1e-7, 1e-6, "PASS"),                    # passes on the finer flow: a pass, the first value kept
    (9e-5, 1e-6, "FAIL"),                    # 1e-4 -> 9e-5: changed by less than 1/3 of 9e-5, converged
    (3e-5, 1e-6, "N/V"),                     # fell threefold (changed by 7e-5 >= 3e-5 / 3): not converged
    (7e-5, 1e-6, "N/V"),                     # changed by 3e-5 >= 7e-5 / 3 (its new value's third, not the old's)
    (1e-4, 1e-6, "FAIL"),                    # unchanged: a failure
    (math.nan, 1e-6, "FAIL"),                # the finer flow gives no number: still a failure
    (1e-4, None, "FAIL"),                    # reported only (INFO) on the finer flow: still a failure
])
def test_a_failure_is_replaced_only_by_a_pass_or_an_integration_limit(monkeypatch, fine_value, fine_tolerance,
                                                                       status):
    ctx, fine = _ctx(1e-4), _ctx(fine_value, fine_tolerance)
    fine.checks = []
    ctx.with_fine_full_flow = lambda: fine
    monkeypatch.setitem(group.KINDS, "stand-in", Kind("stand-in", lambda c: c.checks.append(
        Check("CACO", 1.0, "q", fine_value, fine_tolerance)), "paper", ()))
    [out] = group._remeasure(ctx, ["stand-in"])
    assert group.INTEGRATION_LIMITED == 3.0 and out.status == status
    if status == "N/V":
        assert out.tolerance == NOT_VERIFIABLE and "limited by the full flow's integration" in out.detail["message"]
    if status == "PASS":
        assert out.detail["value_at_default_tolerances"] == 1e-4
