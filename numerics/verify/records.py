"""Check records and their table, JSON and summary: one format for every kind of check."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from derivations.core.output import json_ready

__all__ = ["Check", "Checks", "NOT_VERIFIABLE", "summarize", "format_table", "rel_dev"]

#: Tolerance marker of a check that could not be carried out (status ``N/V``).
NOT_VERIFIABLE = "not verifiable"


@dataclass
class Check:
    """One verification result.

    Attributes
    ----------
    parameterization : str
    ratio : float
        Learning-rate ratio eta_QK / eta_OV (eta_OV = 1).
    quantity : str
        What was measured.
    value : float
        The measured value (NaN if it could not be computed).
    tolerance : float, (float, float), None or NOT_VERIFIABLE
        Upper bound (``value <= tolerance``), accepted closed range,
        ``None`` for a value that is only reported (status INFO), or
        :data:`NOT_VERIFIABLE` for a check these settings cannot carry out
        (status N/V; the reason is in ``detail["message"]``).
    detail : dict
        Extra numbers (per-component deviations, errors, ...).
    task : str or None
        The engine task verified (``--task``); None for the paper's model.
    """

    parameterization: str
    ratio: float
    quantity: str
    value: float
    tolerance: float | tuple | None = None
    detail: dict = field(default_factory=dict)
    task: str | None = None

    @property
    def status(self) -> str:
        """``"PASS"``, ``"FAIL"``, ``"INFO"`` (reported, not checked) or
        ``"N/V"`` (not verifiable with these settings)."""
        if self.tolerance is None:
            return "INFO"
        if isinstance(self.tolerance, str):
            return "N/V"
        v = self.value
        if not (isinstance(v, (int, float)) and math.isfinite(v)):
            return "FAIL"
        if isinstance(self.tolerance, tuple):
            lo, hi = self.tolerance
            return "PASS" if lo <= v <= hi else "FAIL"
        return "PASS" if v <= self.tolerance else "FAIL"

    def as_dict(self) -> dict:
        """JSON-ready record (NaN/inf become ``None``); ``task`` first when set."""
        tol = self.tolerance
        if isinstance(tol, tuple):
            tol = [float(t) for t in tol]
        elif tol is not None and not isinstance(tol, str):
            tol = float(tol)
        head = {} if self.task is None else {"task": self.task}
        return {**head, "parameterization": self.parameterization, "ratio": float(self.ratio),
                "quantity": self.quantity, "value": json_ready(self.value),
                "tolerance": tol, "status": self.status,
                "detail": json_ready(self.detail)}


class Checks(list):
    """The :class:`Check` records of a run, and the kinds it skipped.

    Parameters
    ----------
    checks : iterable of Check, optional
        The records.
    skipped : iterable of dict, optional
        The kinds a subject lacks the capability for, each ``{"parameterization", "kind", "reason"}``:
        the attribute ``skipped`` (a list).
    """

    def __init__(self, checks=(), skipped=()):
        super().__init__(checks)
        self.skipped = list(skipped)


def rel_dev(x, ref):
    """Max pointwise relative deviation ``|x - ref| / |ref|`` (0/0 counts as 0).

    Parameters
    ----------
    x, ref : array_like

    Returns
    -------
    float
        nan for arrays of different shapes, empty ones, or a nan entry; inf for a nonzero difference
        from a zero ``ref``.
    """
    x = np.asarray(x, dtype=float)
    ref = np.asarray(ref, dtype=float)
    if x.shape != ref.shape or x.size == 0:
        return math.nan
    diff = np.abs(x - ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(diff == 0, 0.0, diff / np.abs(ref))
    if np.any(np.isnan(d)):
        return math.nan
    return float(np.max(d))


def summarize(checks, elapsed=None, settings=None) -> dict:
    """Counts of a list of checks.

    Parameters
    ----------
    checks : list of Check
    elapsed : float, optional
        Seconds, rounded to ms in the result.
    settings : dict, optional

    Returns
    -------
    dict
        ``n_checks, n_pass, n_fail, n_info, n_not_verifiable, ok`` (ok: something was checked,
        nothing failed and everything was verifiable), and ``elapsed_s`` and ``settings`` when given.
    """
    st = [c.status for c in checks]
    out = {"n_checks": len(st), "n_pass": st.count("PASS"), "n_fail": st.count("FAIL"),
           "n_info": st.count("INFO"), "n_not_verifiable": st.count("N/V"),
           "ok": bool(st) and "FAIL" not in st and "N/V" not in st}
    if elapsed is not None:
        out["elapsed_s"] = round(float(elapsed), 3)
    if settings is not None:
        out["settings"] = json_ready(settings)
    return out


def _fmt_tol(tol):
    if tol is None:
        return "(report)"
    if isinstance(tol, str):
        return "(n/a)"
    if isinstance(tol, tuple):
        return f"[{tol[0]:g}, {tol[1]:g}]"
    return f"<= {tol:.0e}"


def format_table(checks) -> str:
    """The checks as a fixed-width text table, then the reason of each check that failed or could not be
    carried out, where it has one (``detail["message"]``), one line each.

    Parameters
    ----------
    checks : list of Check

    Returns
    -------
    str
    """
    head = ("param", "ratio", "quantity", "value", "tolerance", "status")
    rows = [(c.parameterization, f"{c.ratio:g}", c.quantity,
             f"{c.value:.3e}" if math.isfinite(c.value) else "nan",
             _fmt_tol(c.tolerance), c.status) for c in checks]
    w = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
    line = "  ".join("{:<%d}" % wi for wi in w[:3]) + "  " + \
        "  ".join("{:>%d}" % wi for wi in w[3:5]) + "  {:<%d}" % w[5]
    out = [line.format(*head), "  ".join("-" * wi for wi in w)]
    out += [line.format(*row) for row in rows]
    out += [f"{c.parameterization} {c.ratio:g} {c.quantity}: {' '.join(str(c.detail['message']).split())}"
            for c in checks if c.status in ("FAIL", "N/V") and c.detail.get("message")]
    return "\n".join(out)
