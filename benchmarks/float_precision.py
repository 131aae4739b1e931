r"""Float64 against mpmath: the relative error of every numeric function of the reduced dynamics.

    python benchmarks/float_precision.py [--quick] [--json]

For every task the engine reduces (the built-in ones and the task file
``docs/examples/query-copies-file.toml``, whose groups are per class) and every parameterization,
the float64 functions the dynamics use -- the loss and the relevant attention of
:class:`numerics.dynamics.lambdified_flow.LambdifiedFlow` (``math`` backend), the attention shares
of :func:`numerics.dynamics.state_at_loss` (NumPy), the flow's right-hand side -- and the paper's
generated functions (:mod:`numerics._generated`: ``alpha``, ``loss``, ``loss_of_margin``,
``reduced_rhs``, the first integral relative to its cancellation scale, the orbit) are evaluated
on a grid of states and parameters and set beside the same SymPy expressions evaluated by mpmath
at 50 digits (the engine's expressions as derived, no float rewrite; the generated functions'
``mpmath`` variant).

The grid: losses from the start down to 1e-2 ... 1e-14 (and 1e-30, 1e-100, 1e-300 reg), scores
``mu_QK`` from -30 to 800, ``m, n, b`` at 1e-100, 1e-3, their defaults, 1e3 and 1e100 (one at a
time and together), ``M`` in {2, 20, 10**6}. The relative error is ``|x - ref| / |ref|`` (ref 0:
``|x|``); a value float64 cannot hold (``|ref|`` above 1e308 or below 1e-300) is left out; a float
function that raises or returns a value that is not finite where the reference is finite counts
as ``inf``. Printed per function: the worst relative error within the brief's grid (losses down to
1e-14) and beyond it, and where.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path

import mpmath
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("paper", "shared-irrelevant", "query-in-context", "shared-irrelevant+query-in-context",
         "query-copies", str(ROOT / "docs" / "examples" / "query-copies-file.toml"))
LOSSES = (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 1e-14)
BEYOND = (1e-30, 1e-100, 1e-300)
SCORES = (-30.0, -1.0, 0.0, 1.0, 10.0, 40.0, 300.0, 800.0)
EXTREMES = (1e-100, 1e-3, 1e3, 1e100)
DPS = 50


def parameter_grid(defaults, quick=False):
    """``m, n, b`` one at a time and together at the extremes; ``M`` in {2, 20, 10**6}."""
    base = {k: float(defaults[k]) for k in ("m", "n", "b")}
    combos = [dict(base)]
    for key, v in itertools.product(("m", "n", "b"), EXTREMES):
        combos.append({**base, key: v})
    for v, w in itertools.product((1e-100, 1e100), repeat=2):
        combos.append({**base, "m": v, "n": w})
        combos.append({"m": v, "n": w, "b": v})
    if quick:
        combos = combos[:1] + [c for c in combos if max(c.values()) >= 1e100 or min(c.values()) <= 1e-100][:4]
    return [dict(c, M=M) for c in combos for M in ((20,) if quick else (2, 20, 10**6))]


def rel_error(x, ref):
    """``|x - ref| / |ref|`` (ref 0: ``|x|``); None when ``ref`` is outside float64's range."""
    if isinstance(ref, mpmath.mpc):
        if ref.imag != 0:
            return None
        ref = ref.real
    ref = mpmath.mpf(ref)
    if ref != 0 and not (mpmath.mpf("1e-300") <= abs(ref) <= mpmath.mpf("1e308")):
        return None
    if x is None or not math.isfinite(x):
        return math.inf
    if ref == 0:
        return abs(x)
    return float(abs(mpmath.mpf(x) - ref) / abs(ref))


#: The regions of the grid, the columns of the table.
REGIONS = ("core", "params", "scores", "beyond")


def region(extreme, score, loss):
    """``core``: the task's parameters, scores within [-30, 40], losses down to 1e-14;
    ``params``: m, n or b at an extreme; ``scores``: a score of 300 or more; ``beyond``: a loss
    below 1e-14."""
    if loss is not None and loss < 1e-14:
        return "beyond"
    if score >= 300:
        return "scores"
    return "params" if extreme else "core"


class Worst:
    """The worst relative error of each function in each region of the grid."""

    def __init__(self):
        self.table = {}

    def add(self, name, where, err, reg="core"):
        if err is None:
            return
        key = (name, reg)
        if key not in self.table or err > self.table[key][0]:
            self.table[key] = (err, where)


def call_float(f, *a):
    try:
        with np.errstate(all="ignore"):
            out = f(*a)
    except (OverflowError, ZeroDivisionError, ValueError):
        return None
    return out


def floats(out, k):
    """``k`` floats of a function's output (None each when it raised)."""
    if out is None:
        return [None] * k
    v = np.atleast_1d(np.asarray(out, dtype=float)).ravel()
    return [float(x) for x in v]


def observable_states(flow, values, mp_margin, quick=False):
    """States ``y`` (floats, in ``flow.names`` order) at each target loss and score; the last
    observable ``mu_OV`` solved for the loss (the margin is linear in it)."""
    names = flow.names
    ov = names.index("mu_OV")
    others = [i for i in range(len(names)) if i != ov]
    side = {"mu_QK": SCORES if not quick else (0.0, 40.0, 800.0), "mu_QK_q": (-20.0, 0.0, 20.0),
            "mu_OV_q": (0.0, 2.0)}
    M = mpmath.mpf(values["M"])
    for combo in itertools.product(*(side[names[i]] for i in others)):
        y = [0.0] * len(names)
        for i, v in zip(others, combo):
            y[i] = v
        margin0 = mp_margin(*y)
        y[ov] = 1.0
        slope = mp_margin(*y) - margin0
        if slope == 0:
            continue
        for L in LOSSES + BEYOND + (None,):
            y = list(y)
            if L is None:        # the start of the flow: no margin
                y[ov] = 0.0
            else:
                target = mpmath.log(M - 1) - mpmath.log(mpmath.expm1(L))
                y[ov] = float((target - margin0) / slope)
                if not math.isfinite(y[ov]):
                    continue
            yield tuple(y), L


def margin_expr(loss):
    """The margin ``S`` of a loss ``log(1 + (M - 1) e^{-S})`` (its one exponential)."""
    import sympy as sp
    (arg,) = loss.args
    exps = [f.args[0] for t in sp.Add.make_args(arg) for f in sp.Mul.make_args(t) if isinstance(f, sp.exp)]
    return -sp.Add(*exps)


def engine_task(worst, task_name, quick=False):
    """The engine's loss, relevant attention and shares (CACO) and right-hand side (each P)."""
    import sympy as sp

    from derivations.core.vocabulary import PARAMETERIZATIONS
    from derivations.tasks import get_task
    from numerics.dynamics.state import _attention_shares
    from numerics.dynamics.task_systems import reduced_flow, task_parameters
    from numerics.functions.numeric_function import numeric

    task = get_task(task_name)
    label = task.name
    flow = reduced_flow(task_name, "CACO")
    args = tuple(flow.coords) + tuple(flow.params)
    mp_loss = numeric(flow.loss, args, "mpmath", stable=False).func
    mp_alpha = numeric(flow.alpha, args, "mpmath", stable=False).func
    mp_S = numeric(margin_expr(flow.loss), args, "mpmath", stable=False).func
    from derivations.task_catalog import task_reduction
    red = task_reduction(task, "CACO")
    table = task.symbols()
    share_exprs = {
        "relevant": sum((red.attention[g] for g in task.relevant if g in red.attention), sp.S.Zero),
        "self": red.attention.get(task.query, sp.S.Zero),
        "other": sum((v for g, v in red.attention.items() if g != task.query and g not in task.relevant),
                     sp.S.Zero)}
    rhs_flows = {P: reduced_flow(task_name, P) for P in PARAMETERIZATIONS}
    mp_rhs = {P: numeric(tuple(f.rhs), tuple(f.coords) + tuple(f.params), "mpmath", stable=False).func
              for P, f in rhs_flows.items()}
    defaults = task_parameters(task_name)
    for grid in parameter_grid(defaults, quick):
        values = {**defaults, **grid, "eta_QK": 2.0, "eta_OV": 1.0, "eta_Q": 2.0, "eta_K": 2.0,
                  "eta_O": 1.0, "eta_V": 1.0}
        extreme = any(grid[k] != defaults[k] for k in ("m", "n", "b"))
        pv = tuple(float(values[p]) for p in flow.param_names)
        mp_pv = tuple(mpmath.mpf(v) for v in pv)
        with mpmath.workdps(DPS):
            mp_m = lambda *y: mp_S(*map(mpmath.mpf, y), *mp_pv)      # noqa: E731
            states = list(observable_states(flow, values, mp_m, quick))
            subs = {table[k]: v for k, v in values.items() if k in table}
            sh_free = sorted(set().union(*(sp.sympify(e).subs(subs).free_symbols for e in share_exprs.values())),
                             key=str)
            mp_sh = numeric(tuple(sp.sympify(e).subs(subs) for e in share_exprs.values()), sh_free, "mpmath",
                            stable=False).func
            coords = {n: np.array([y[i] for y, _ in states]) for i, n in enumerate(flow.names)}
            got = call_float(lambda: _attention_shares(task, coords, values))
            for j, (y, L) in enumerate(states):
                reg = region(extreme, max(y[i] for i, k in enumerate(flow.names) if k.startswith("mu_QK")), L)
                where = f"{label} {_short(grid)} y={_short(dict(zip(flow.names, y)))} L={L}"
                ym = tuple(mpmath.mpf(v) for v in y)
                worst.add("engine loss", where, rel_error(call_float(flow._L, *y, *pv),
                                                           mp_loss(*ym, *mp_pv)), reg)
                worst.add("engine alpha", where, rel_error(call_float(flow._a, *y, *pv),
                                                            mp_alpha(*ym, *mp_pv)), reg)
                ref = mp_sh(*(ym[flow.names.index(str(s))] for s in sh_free))
                for k, r in zip(("relevant", "self", "other"), ref):
                    x = None if got is None else float(got[f"{k}_attention"][j])
                    worst.add(f"engine share {k}", where, rel_error(x, r), reg)
                at = dict(zip(flow.names, y))
                for P, f in rhs_flows.items():
                    if f.via is None:
                        yy = tuple(at[k] for k in f.names)
                        _rhs(worst, f, P, yy, tuple(map(mpmath.mpf, yy)), values, mp_rhs[P], where, reg)
            for P, f in rhs_flows.items():
                if f.via is not None:
                    for y in family_states(f, quick):
                        ym = tuple(mpmath.mpf(v) for v in y)
                        where = f"{label} {_short(grid)} family y~{y[0]:g}"
                        _rhs(worst, f, P, y, ym, values, mp_rhs[P], where, "params" if extreme else "core")


def family_states(flow, quick):
    """Family coordinates of one magnitude each (a little spread)."""
    for v in ((0.0, 1.0, 30.0) if quick else (0.0, 0.1, 1.0, 3.0, 10.0, 30.0)):
        yield tuple(v * (1 + 0.1 * i) for i in range(len(flow.names)))


def _rhs(worst, f, P, y, ym, values, mp_f, where, reg):
    pv = tuple(float(values[p]) for p in f.param_names)
    got = floats(call_float(f._f, *y, *pv), len(y))
    ref = mp_f(*ym, *(mpmath.mpf(v) for v in pv))
    for name, x, r in zip(f.names, got, ref):
        worst.add(f"engine rhs {P} d{name}", where, rel_error(x, r), reg)


def _short(d):
    return "(" + ",".join(f"{k}={v:.3g}" for k, v in d.items()) + ")"


def generated(worst, quick=False):
    """The paper's generated functions: float64 (``numpy``) against their ``mpmath`` variant."""
    from derivations.core.vocabulary import PAPER_SETTING
    from numerics import _generated as G

    def fn(name, backend):
        return G.FUNCTIONS[name][2][backend]

    defaults = {k: PAPER_SETTING[k] for k in ("m", "n", "b")}
    for grid in parameter_grid(defaults, quick):
        m, n, b, M = grid["m"], grid["n"], grid["b"], grid["M"]
        extreme = any(grid[k] != defaults[k] for k in ("m", "n", "b"))
        rates = dict(eta_QK=2.0, eta_OV=1.0, eta_Q=2.0, eta_K=2.0, eta_O=1.0, eta_V=1.0)
        with mpmath.workdps(DPS):
            for u in SCORES:
                mpa = fn("alpha", "mpmath")(mpmath.mpf(u), mpmath.mpf(m), mpmath.mpf(n))
                for L in LOSSES + BEYOND + (None,):
                    reg = region(extreme, u, L)
                    if L is None:
                        s = 0.0
                    else:
                        s = float(mpmath.log(M - 1) - mpmath.log(mpmath.expm1(L)))
                    ov = float(mpmath.mpf(s) / mpa)
                    if not math.isfinite(ov):
                        continue
                    where = f"paper {_short(grid)} mu_QK={u:g} mu_OV={ov:.4g} L={L}"
                    _generated_point(worst, fn, (ov, u, s), (m, n, b, M), rates, where, reg)


def _generated_point(worst, fn, state, model, rates, where, reg):
    from derivations.core.vocabulary import PARAMETERIZATIONS
    ov, u, s = state
    m, n, b, M = model
    mp = lambda *a: tuple(mpmath.mpf(x) for x in a)      # noqa: E731
    checks = [("gen alpha", "alpha", (u, m, n)), ("gen loss", "loss", (ov, u, m, n, M)),
              ("gen loss_of_margin", "loss_of_margin", (s, M))]
    for name, key, a in checks:
        worst.add(name, where, rel_error(floats(call_float(fn(key, "numpy"), *a), 1)[0], fn(key, "mpmath")(*mp(*a))),
                  reg)
    for P in PARAMETERIZATIONS:
        eps = 1e-2
        C_QK = 0.0 if P[:2] == "CA" else eps ** 2 * (1 / rates["eta_Q"] - 1 / rates["eta_K"] + 0.5)
        C_OV = 0.0 if P[2:] == "CO" else eps ** 2 * (1 / rates["eta_O"] - 1 / rates["eta_V"] + 0.5)
        x = ov if P[2:] == "CO" else abs(ov)
        uu = u if P[:2] == "CA" else abs(u) + 1e-3
        params = (m, n, b, M, rates["eta_QK"], rates["eta_OV"], rates["eta_Q"], rates["eta_K"], rates["eta_O"],
                  rates["eta_V"], C_QK, C_OV)
        for bal in ("balanced", "unbalanced"):
            key = f"reduced_rhs[{P},{bal}]"
            got = floats(call_float(fn(key, "numpy"), x, uu, *params), 2)
            ref = fn(key, "mpmath")(*mp(x, uu, *params))
            for c, g, r in zip(("dmu_OV", "dmu_QK"), got, ref):
                worst.add(f"gen rhs {P} {bal} {c}", where, rel_error(g, r), reg)
        got = floats(call_float(fn(f"first_integral[{P}]", "numpy"), x, uu, *params), 1)[0]
        ref = fn(f"first_integral[{P}]", "mpmath")(*mp(x, uu, *params))
        scale = fn(f"first_integral_scale[{P}]", "mpmath")(*mp(x, uu, *params))
        if got is not None and math.isfinite(got) and scale != 0 and abs(scale) < mpmath.mpf("1e308"):
            worst.add(f"gen first_integral {P} (/scale)", where, float(abs(got - ref) / scale), reg)
        else:
            worst.add(f"gen first_integral {P} (/scale)", where, rel_error(got, ref), reg)
        if P in ("CACO", "CAFO"):
            a = (x, 0.0, 0.0, *params)
            got = floats(call_float(fn(f"orbit[{P}]", "numpy"), *a), 1)[0]
            worst.add(f"gen orbit {P}", where, rel_error(got, fn(f"orbit[{P}]", "mpmath")(*mp(*a))), reg)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small grid")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--where", action="store_true", help="where each error above 1e-13 is")
    ap.add_argument("--tasks", default=",".join(TASKS))
    a = ap.parse_args(argv)
    worst = Worst()
    generated(worst, a.quick)
    for t in a.tasks.split(","):
        if t:
            engine_task(worst, t, a.quick)
    names = sorted({k[0] for k in worst.table})
    rows = {name: {reg: worst.table.get((name, reg), (None, None)) for reg in REGIONS} for name in names}
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    fmt = lambda v: "-" if v is None else f"{v:.1e}"      # noqa: E731
    print(f"{'function':40}" + "".join(f"{reg:>9}" for reg in REGIONS))
    for name, row in rows.items():
        print(f"{name:40}" + "".join(f"{fmt(row[reg][0]):>9}" for reg in REGIONS))
    if a.where:
        for name, row in rows.items():
            for reg in REGIONS:
                if row[reg][0] is not None and row[reg][0] > 1e-13:
                    print(f"{name} [{reg}] {row[reg][0]:.2e} at {row[reg][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
