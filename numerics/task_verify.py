r"""``numerics.verify --task NAME``: a task's reduced system against its full matrix model.

For a task of :mod:`derivations.task` that the symbolic engine reduces, every
parameterization (CACO, CAFO, FACO, FAFO) and every learning-rate ratio
:math:`r = \eta_{QK}/\eta_{OV}` (:math:`\eta_{OV} = 1`, factor rates equal to
their circuit's), on a concrete instance (default :math:`M = 4` and the task's
default parameters):

* **full model**: :class:`numerics.task_model.TaskModel` built from the task's
  concrete instance (:func:`numerics.task_model.instance_of_task`), gradient
  flow with :func:`scipy.integrate.solve_ivp` (DOP853, rtol 1e-11, atol 1e-13)
  from a point of the invariant family: zero for a collapsed circuit, the
  structured factor initialization of scale ``eps`` (default 0.1,
  ``TaskInstance.initial_factors``) for a factorized one;
* **reduced system**: the engine's flow on the family coordinates
  :math:`\theta_i` (:class:`numerics.task_state.TaskReducedSystem`, same
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
      :math:`\max_t|\mathrm{obs}|`;
  ``loss``, ``alpha`` (1e-8)
      max relative deviation along the grid;
  ``distance`` (1e-9)
      max relative Frobenius distance of the full matrices from the family;
  ``loss at T`` (1e-7)
      full-model loss at T relative to the target.

Output: one row per check; ``--json`` for machine-readable output. Exit 0 when
all pass, 1 when one fails, 2 on bad input (one line on stderr, before any work).

>>> from numerics.task_verify import run_task_checks
>>> checks = run_task_checks("paper", ["CACO"], [1.0], M=3, target_loss=0.5)
>>> all(c["status"] == "PASS" for c in checks)
True
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .task_model import PARAMETERIZATIONS, TaskModel, instance_of_task, task_gradient_flow
from .task_state import TaskReducedSystem, task_parameters

__all__ = ["TaskFamily", "task_family", "run_task_checks", "main", "TOLERANCES"]

#: Tolerances of the checks (see the module docstring).
TOLERANCES = {"theta": 1e-7, "observables": 1e-7, "loss": 1e-8, "alpha": 1e-8, "distance": 1e-9,
              "loss at T": 1e-7}


@dataclass(frozen=True, eq=False)
class TaskFamily:
    """The invariant family of a (task, parameterization) as the verifier needs it.

    Attributes
    ----------
    system : TaskReducedSystem
        Flow on the family coordinates (``system.coords``).
    basis : callable
        ``basis(M_value, values) -> {coord name: (matrix name, U ndarray)}``,
        in the token order of the task's concrete instance.
    observables : (TaskReducedSystem, callable) or None
        The closed ODE of the observables and ``obs(theta, values)``, when the
        engine found one.
    """

    system: TaskReducedSystem
    basis: object
    observables: object = None


@lru_cache(maxsize=None)
def task_family(task_name, parameterization) -> TaskFamily:
    """The family of a built-in task from the engine (SymPy once per process)."""
    from derivations.task import TASK_PARAMETERS, get_task
    from derivations.task_reduction import basis_matrices

    from .lambdified import numeric
    from .task_state import family_system, reduced_system, task_reduction
    system = family_system(task_name, parameterization)
    task = get_task(task_name)
    red = task_reduction(task, parameterization)

    def basis(M_value, values):
        subs = {TASK_PARAMETERS[k]: v for k, v in values.items() if k in TASK_PARAMETERS}
        shared = {g.name: int(g.types.subs(subs)) for g in task.groups if not g.per_class}
        return {nm: (mat, np.array(U, dtype=float))
                for nm, (mat, U) in basis_matrices(red, M_value, shared).items()}

    observables = None
    if red.odes is not None:
        osys = reduced_system(task_name, parameterization)
        exprs = tuple(red.observables[c] for c in osys.coords)
        free = set().union(*(e.free_symbols for e in exprs)) - set(system.coords)
        pars = tuple(sorted(free, key=str))
        f = numeric(exprs, tuple(system.coords) + pars, "math").func
        names = tuple(str(p) for p in pars)
        observables = (osys, lambda theta, values: np.array(
            f(*theta, *(float(values[p]) for p in names)), dtype=float))
    return TaskFamily(system, basis, observables)


class _Projector:
    """Least-squares coordinates of params on the family basis, and the residual."""

    def __init__(self, basis, names):
        self.names = names
        self.by_matrix = {}
        for i, nm in enumerate(names):
            mat, U = basis[nm]
            self.by_matrix.setdefault(mat, []).append((i, U))
        self.solvers = {}
        for mat, items in self.by_matrix.items():
            B = np.stack([U.ravel() for _, U in items], axis=1)          # (entries, n_coords)
            self.solvers[mat] = (B, np.linalg.pinv(B))

    def deviations(self, theta, ref):
        r"""Per coordinate: :math:`\max_t |\theta_i - \theta^{ref}_i|\,\|U_i\|_F` over
        :math:`\max_t \|\sum_j \theta^{ref}_j U_j\|_F` (the coordinates of the same matrix):
        the deviation's share of its matrix, so that a coordinate that stays 0 is
        compared on the scale of its matrix rather than on its own."""
        out = {}
        for mat, items in self.by_matrix.items():
            B, _ = self.solvers[mat]
            idx = [i for i, _ in items]
            size = float(np.max(np.linalg.norm(ref[:, idx] @ B.T, axis=1)))
            for col, i in enumerate(idx):
                d = float(np.max(np.abs(theta[:, i] - ref[:, i]))) * float(np.linalg.norm(B[:, col]))
                out[self.names[i]] = d / size if size > 0 else d
        return out

    def __call__(self, params):
        theta = np.zeros(len(self.names))
        dist = 0.0
        for mat, items in self.by_matrix.items():
            B, Bp = self.solvers[mat]
            w = np.asarray(params[mat], dtype=float).ravel()
            c = Bp @ w
            theta[[i for i, _ in items]] = c
            nw = np.linalg.norm(w)
            if nw > 0:
                dist = max(dist, float(np.linalg.norm(w - B @ c) / nw))
        return theta, dist


def _rel(x, ref, scale=None):
    x, ref = np.asarray(x, float), np.asarray(ref, float)
    if scale is None:
        scale = np.abs(ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(scale > 0, np.abs(x - ref) / np.where(scale > 0, scale, 1), np.abs(x - ref))
    return float(np.max(r)) if r.size else math.nan


def _check(task, P, ratio, quantity, value, tol, **detail):
    ok = isinstance(value, float) and math.isfinite(value) and value <= tol
    return {"task": task, "parameterization": P, "ratio": float(ratio), "quantity": quantity,
            "value": value if math.isfinite(value) else None, "tolerance": tol,
            "status": "PASS" if ok else "FAIL", "detail": detail}


def run_task_checks(task_name, parameterizations=PARAMETERIZATIONS, ratios=(0.1, 1.0, 10.0), *,
                    M=4, target_loss=0.1, eps=0.1, n_times=24, rtol=1e-11, atol=1e-13,
                    **params) -> list:
    """Run the checks of the module docstring; returns a list of check records (dicts)."""
    from derivations.task import get_task
    values = task_parameters(task_name, M=M, **params)
    Mv = int(values["M"])
    inst = instance_of_task(task_name, M=Mv, **{k: v for k, v in values.items() if k != "M"})
    raw = get_task(task_name).instance(M=Mv, values={k: v for k, v in values.items() if k != "M"})
    if not (0 < target_loss < math.log(inst.n_out)):
        raise ValueError(f"target_loss must be in (0, log n_out) = (0, {math.log(inst.n_out):.6g}); "
                         f"got {target_loss!r}")
    checks = []
    for P in parameterizations:
        fam = task_family(task_name, P)
        proj = _Projector(fam.basis(Mv, values), fam.system.names)
        for r in ratios:
            rates = dict(eta_QK=r, eta_OV=1.0, eta_Q=r, eta_K=r, eta_O=1.0, eta_V=1.0)
            vals = {**values, **rates}
            model = TaskModel(inst, P, eta_QK=r, eta_OV=1.0)
            p0 = model.init_params("zero")
            if model.qk_factorized or model.ov_factorized:
                fac = raw.initial_factors(eps)
                for k in model.keys:
                    if k in fac:
                        p0[k] = np.asarray(fac[k], dtype=float)
            theta0, d0 = proj(p0)
            red = fam.system.solve(theta0, vals, target_loss=target_loss, rtol=rtol, atol=atol)
            if red["status"] != 1:
                checks.append(_check(task_name, P, r, "reduced flow reaches target", math.nan, 0.0,
                                     message=red["message"]))
                continue
            T = red["crossings"][target_loss]["t"]
            grid = T * np.linspace(1.0 / n_times, 1.0, n_times)
            red = fam.system.solve(theta0, vals, t_span=(0.0, T), t_eval=grid, rtol=rtol, atol=atol)
            full = task_gradient_flow(model, p0, t_span=(0.0, T), t_eval=grid, rtol=rtol, atol=atol)
            if full.status != 0 or red["status"] != 0 or full.t.size != n_times:
                checks.append(_check(task_name, P, r, "integration", math.nan, 0.0,
                                     message=f"{full.message}; {red['message']}"))
                continue
            th, dist = [], [d0]
            for y in full.y:
                t_, d_ = proj(model.unflatten(y))
                th.append(t_)
                dist.append(d_)
            th = np.array(th)
            per = proj.deviations(th, red["y"])
            checks.append(_check(task_name, P, r, "theta", max(per.values()), TOLERANCES["theta"],
                                 **per))
            if fam.observables is not None:
                osys, obs_of = fam.observables
                o_red = osys.solve(obs_of(theta0, vals), vals, t_span=(0.0, T), t_eval=grid,
                                   rtol=rtol, atol=atol)
                o_full = np.array([obs_of(t_, vals) for t_ in th])
                if o_red["status"] != 0 or o_red["y"].shape != o_full.shape:
                    checks.append(_check(task_name, P, r, "observables", math.nan, 0.0,
                                         message=o_red["message"]))
                else:
                    scale = np.max(np.abs(o_red["y"]), axis=0)
                    per = {nm: float(np.max(np.abs(o_full[:, i] - o_red["y"][:, i])) / scale[i])
                           for i, nm in enumerate(osys.names)}
                    checks.append(_check(task_name, P, r, "observables", max(per.values()),
                                         TOLERANCES["observables"], **per))
            checks.append(_check(task_name, P, r, "loss", _rel(full.loss, red["loss"]),
                                 TOLERANCES["loss"]))
            checks.append(_check(task_name, P, r, "alpha", _rel(full.alpha, red["alpha"]),
                                 TOLERANCES["alpha"]))
            checks.append(_check(task_name, P, r, "distance", float(max(dist)),
                                 TOLERANCES["distance"]))
            checks.append(_check(task_name, P, r, "loss at T",
                                 abs(float(full.loss[-1]) - target_loss) / target_loss,
                                 TOLERANCES["loss at T"], T=T))
    return checks


# --------------------------------------------------------------------------- #
# command line
# --------------------------------------------------------------------------- #
class _ArgError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _ArgError(message)


def _parse_params(text):
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, val = item.partition("=")
        if not sep:
            raise _ArgError(f"--params: expected key=value, got {item!r}")
        try:
            out[key.strip()] = float(val)
        except ValueError:
            raise _ArgError(f"--params: {key.strip()} must be a number; got {val.strip()!r}") from None
    return out


def _parse_ratios(text):
    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise _ArgError(f"--ratios: expected comma-separated numbers, got {text!r}") from None
    if not all(math.isfinite(v) and v > 0 for v in vals):
        raise _ArgError(f"--ratios: ratios must be finite numbers > 0, got {text!r}")
    return vals


def build_parser():
    """The argparse parser of ``python -m numerics.verify --task NAME`` (rendered in the docs)."""
    p = _Parser(prog="python -m numerics.verify --task NAME",
                description="Verify a task's reduced system against its full matrix model.")
    p.add_argument("--task", required=True, metavar="NAME",
                   help="a built-in task the symbolic engine reduces (python -m derivations.print_dynamics "
                        "--task list)")
    p.add_argument("--params", default="", metavar="m=5,n=50,b=50,M=4,n_c=2",
                   help="model and task parameters, any subset (default: the paper's m, n, b; M = 4, "
                        "3 with --quick; M <= 30)")
    p.add_argument("--ratios", default=None, metavar="0.1,1,10",
                   help="learning-rate ratios eta_QK/eta_OV, each finite > 0 (default 0.1,1,10; quick: 1)")
    p.add_argument("--parameterization", default="all", choices=list(PARAMETERIZATIONS) + ["all"],
                   help="which parameterization to verify (default: all four)")
    p.add_argument("--target-loss", type=float, default=None, metavar="L",
                   help="integrate until the loss reaches L, in (0, log M) (default 0.1; quick: 0.3)")
    p.add_argument("--quick", action="store_true",
                   help="ratio 1, target loss 0.3, M = 3 unless given")
    p.add_argument("--json", action="store_true", help="JSON output")
    return p


def main(argv=None) -> int:
    """Entry point of ``python -m numerics.verify --task NAME ...``; returns the exit status."""
    parser = build_parser()
    try:
        a = parser.parse_args(argv)
        from derivations.task import get_task
        try:
            task = get_task(a.task)
            task.check_symbolic()
        except ValueError as exc:
            raise _ArgError(f"--task: {exc}") from None
        params = _parse_params(a.params)
        params.setdefault("M", 3 if a.quick else 4)
        try:
            values = task_parameters(a.task, **params)
        except ValueError as exc:
            raise _ArgError(f"--params: {exc}") from None
        if values["M"] > 30:
            raise _ArgError(f"--params: M must be <= 30 for the full-model check (its matrices "
                            f"are (2M + n_c)^2); got {values['M']:g}")
        ratios = _parse_ratios(a.ratios) if a.ratios else ((1.0,) if a.quick else (0.1, 1.0, 10.0))
        target = a.target_loss if a.target_loss is not None else (0.3 if a.quick else 0.1)
        if not (math.isfinite(target) and 0 < target < math.log(values["M"])):
            raise _ArgError(f"--target-loss must be in (0, log M) = (0, {math.log(values['M']):.6g}); "
                            f"got {target!r}")
        Ps = PARAMETERIZATIONS if a.parameterization == "all" else (a.parameterization,)
        t_setup = time.perf_counter()
        try:
            for P in Ps:
                task_family(a.task, P)
        except ValueError as exc:
            raise _ArgError(f"--task: {exc}") from None
    except _ArgError as exc:
        print(f"python -m numerics.verify: error: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    setup = t0 - t_setup
    checks = run_task_checks(a.task, Ps, ratios, target_loss=target, **params)
    elapsed = time.perf_counter() - t0
    n_fail = sum(c["status"] == "FAIL" for c in checks)
    if a.json:
        print(json.dumps({"checks": checks, "summary": {
            "task": a.task, "n_pass": len(checks) - n_fail, "n_fail": n_fail, "ok": n_fail == 0,
            "seconds": elapsed, "setup_seconds": setup, "params": values, "ratios": list(ratios),
            "target_loss": target}},
            indent=1))
    else:
        print(f"task {a.task}: {', '.join(f'{k}={v:g}' for k, v in values.items())}; "
              f"target loss {target}")
        print(f"{'param':6} {'ratio':>6}  {'quantity':11} {'value':>10}  {'tol':>7}  status")
        for c in checks:
            v = "nan" if c["value"] is None else f"{c['value']:.2e}"
            print(f"{c['parameterization']:6} {c['ratio']:6g}  {c['quantity']:11} {v:>10}  "
                  f"{c['tolerance']:7.0e}  {c['status']}")
        print(f"\n{len(checks) - n_fail} passed, {n_fail} failed; {elapsed:.1f} s "
              f"(+ {setup:.1f} s deriving/lambdifying the reduced systems)")
    return 0 if n_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
