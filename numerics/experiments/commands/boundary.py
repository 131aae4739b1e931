"""``python -m numerics.experiments boundary``: the crossover ratio of self and relevant attention.

For each (parameterization, target loss) one record with ``crossover_ratio`` (the ratio
eta_QK/eta_OV at which the attention on the query's own token equals the attention on the
relevant tokens at that loss), ``crossover_lambda`` and ``reason`` (why there is none):
:func:`numerics.dynamics.boundary` on the task's numbers (:func:`numerics.dynamics.task_shape`).
The master curve behind it holds for CACO from zero: the other parameterizations and starts get
a record with no ratio and the reason.
"""
from __future__ import annotations

from derivations.core.cli import UsageError, parse_list, parse_number, parse_params
from derivations.core.vocabulary import PARAMETERIZATIONS

__all__ = ["add_parser", "prepare"]

#: Why a parameterization other than CACO gets no crossover ratio.
NOT_CACO = ("no master curve: the crossover is derived for collapsed circuits (CACO), whose metric "
            "is constant; the factorized parameterizations' is not")


def add_parser(sub):
    from numerics.dynamics.crossover import RATIO_RANGE

    p = sub.add_parser("boundary", help="the crossover ratio of self and relevant attention (theory)",
                       description="The learning-rate ratio eta_QK/eta_OV above which the query attends more "
                                   "to its own token than to the relevant tokens when training stops at a "
                                   "target loss (CACO gradient flow from zero, through its master curve in "
                                   "Lambda = r (M-1) l(L)^2 / (M b)); one record per (parameterization, "
                                   "target loss), with the reason where there is no crossover.")
    a = p.add_argument
    a("--task", default="query-in-context", metavar="NAME|FILE",
      help="a built-in task or a task file (.toml) of the query-copies shape (default query-in-context)")
    a("--params", default=None, metavar="NAME=VALUE[,...]",
      help="the task's parameter values (e.g. m=5,n=50,b=50,M=20; missing ones take the task's defaults)")
    a("--parameterizations", default="CACO", metavar="P[,P...]",
      help="comma-separated subset of " + ",".join(PARAMETERIZATIONS) + " (default CACO)")
    a("--target-loss", default="0.1", metavar="L[,L...]",
      help="stopping losses, each in (0, log M) (default 0.1)")
    a("--init", default="zero", choices=("zero",),
      help="the start of the flow: zero (the only start with a master curve)")
    a("--ratio-range", default=f"{RATIO_RANGE[0]:g},{RATIO_RANGE[1]:g}", metavar="LO,HI",
      help=f"the ratios searched (default {RATIO_RANGE[0]:g},{RATIO_RANGE[1]:g})")
    a("--json", action="store_true", help="print one JSON object on stdout")
    a("--quiet", action="store_true", help="no human-readable summary")


def _settings(args) -> dict:
    """Every option checked (UsageError, one line), nothing computed."""
    import math

    from numerics.dynamics import task_parameters, task_shape
    params = parse_list("--parameterizations", args.parameterizations, str.upper)
    bad = [p for p in params if p not in PARAMETERIZATIONS]
    if bad:
        raise UsageError(f"--parameterizations: unknown {bad[0]!r}; choose from {','.join(PARAMETERIZATIONS)}")
    raw = {} if args.params is None else parse_params(args.params)
    values = {k: parse_number(f"--params {k}", v) for k, v in raw.items()}
    try:
        task_parameters(args.task, **values)
        shape = task_shape(args.task, **values)
    except ValueError as exc:
        raise UsageError(f"--task {args.task}: {exc}") from None
    targets = parse_list("--target-loss", args.target_loss, lambda t: parse_number("--target-loss", t))
    top = math.log(shape["M"])
    for loss in targets:
        if not 0 < loss < top:
            raise UsageError(f"--target-loss must be in (0, log M = {top:.6g}); got {loss:g}")
    ends = parse_list("--ratio-range", args.ratio_range,
                      lambda t: parse_number("--ratio-range", t, positive=True))
    if len(ends) != 2 or not ends[0] < ends[1]:
        raise UsageError(f"--ratio-range must be LO,HI with 0 < LO < HI; got {args.ratio_range!r}")
    lo, hi = ends
    return {"task": args.task, "shape": shape, "parameterizations": params,
            "target_losses": targets, "init": args.init, "ratio_range": [lo, hi]}


def prepare(args):
    """Check every option (before any flow); return ``(work, format)``."""
    from numerics.dynamics import boundary
    s = _settings(args)

    def work():
        shape = s["shape"]
        records = []
        for P in s["parameterizations"]:
            if P != "CACO":
                records += [{"parameterization": P, "target_loss": L, "crossover_ratio": None,
                             "crossover_lambda": None, "reason": NOT_CACO} for L in s["target_losses"]]
                continue
            for rec in boundary(s=shape["s"], m=shape["m"], n=shape["n"], R=shape["R"],
                                target_loss=s["target_losses"], M=shape["M"], b=shape["b"],
                                ratio_range=tuple(s["ratio_range"])):
                records.append({"parameterization": P, **rec})
        return {"settings": s, "records": records}
    return work, format_table


def format_table(payload) -> str:
    """One line per record."""
    lines = [f"{'P':5} {'loss':>8} {'r*':>12} {'Lambda*':>12}  reason"]
    for r in payload["records"]:
        ratio = "-" if r["crossover_ratio"] is None else f"{r['crossover_ratio']:.6g}"
        lam = "-" if r["crossover_lambda"] is None else f"{r['crossover_lambda']:.6g}"
        lines.append(f"{r['parameterization']:5} {r['target_loss']:8.4g} {ratio:>12} {lam:>12}  "
                     f"{r['reason'] or ''}")
    return "\n".join(lines)
