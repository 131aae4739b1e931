"""Task engine speed: derivation from scratch, exact invariance on M = 3, cached cold start.

Run: ``python benchmarks/task_engine.py [--tasks a,b] [--invariance exact|numeric|none] [--timeout S]``.
Goals (issue 9): deriving a built-in task (all four parameterizations) from scratch < 30 s; its exact
invariance check for M = 3 < 60 s; ``print_dynamics --task NAME`` < 2 s cold (cached).
Each measurement runs in a fresh interpreter (no lru_cache carry-over), with a timeout that is reported.
Times are the child's CPU time (``time.process_time``; the machine may be shared, so wall time is noisy)
and, in brackets, its wall time.
"""
import argparse
import subprocess
import sys
import time

TASKS = ("paper", "shared-irrelevant", "query-in-context", "shared-irrelevant+query-in-context")
PARAMS = ("CACO", "CAFO", "FACO", "FAFO")

DERIVE = """
import time
from derivations.engine import reduce_task
t0, c0 = time.perf_counter(), time.process_time()
for p in {params!r}:
    reduce_task({task!r}, p)
print(f"{{time.process_time() - c0:.2f}} {{time.perf_counter() - t0:.2f}}")
"""

INVARIANCE = """
import time
from derivations.engine import invariance_residual, reduce_task
reduce_task({task!r}, {param!r})
t0, c0 = time.perf_counter(), time.process_time()
res = invariance_residual({task!r}, {param!r}, 3, {types!r}, exact={exact!r})
print(f"{{time.process_time() - c0:.2f}} {{time.perf_counter() - t0:.2f}} {{len(res)}}")
"""


def run(code, timeout):
    t0 = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                             check=True).stdout.split()
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0
    return out, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--invariance", default="exact", choices=["exact", "numeric", "none"])
    ap.add_argument("--params", default=",".join(PARAMS))
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    for task in args.tasks.split(","):
        out, wall = run(DERIVE.format(task=task, params=tuple(PARAMS)), args.timeout)
        derive = "timeout" if out is None else f"{float(out[0]):.1f} s CPU ({float(out[1]):.1f} s wall)"
        print(f"{task:<36} derive (4 parameterizations, from scratch): {derive}  [wall {wall:.1f} s, goal < 30 s]",
              flush=True)
        if args.invariance != "none":
            for p in args.params.split(","):
                types = {"u": 2} if "shared" in task else None
                out, wall = run(INVARIANCE.format(task=task, param=p, types=types,
                                                  exact=args.invariance == "exact"), args.timeout)
                res = ("timeout" if out is None
                       else f"{float(out[0]):.1f} s CPU ({float(out[1]):.1f} s wall), residual entries {out[2]}")
                print(f"{'':<36} {p} M=3 {args.invariance} invariance: {res}  [goal < 60 s]", flush=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "derivations.print_dynamics", "--task", task],
                       check=True, stdout=subprocess.DEVNULL)
        print(f"{'':<36} print_dynamics --task {task} cold (cached): {time.perf_counter() - t0:.2f} s  "
              "[goal < 2 s]", flush=True)


if __name__ == "__main__":
    main()
