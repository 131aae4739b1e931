r"""Timings of the task numerics: the reduced-flow ``state_at_loss`` and ``numerics.verify --task``.

For every task the symbolic engine reduces, in fresh processes (cold: SymPy reduction and
lambdification included):

* ``state_at_loss(loss, ratio, task=task, method="reduced flow")`` -- first call and the mean of 20 further calls;
* ``python -m numerics.verify --task NAME --quick`` and (``--full``) without ``--quick``.

Run::

    python benchmarks/task_numerics.py [--full]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TASKS = ("paper", "shared-irrelevant", "query-in-context", "shared-irrelevant+query-in-context")

STATE = """
import time, sys
t0 = time.perf_counter()
from numerics.dynamics import state_at_loss
kw = {'n_c': 5} if sys.argv[1].startswith('shared') else {}
kw.update(task=sys.argv[1], method='reduced flow')
state_at_loss(0.1, 10.0, **kw)
t1 = time.perf_counter()
for r in range(20):
    state_at_loss(0.01, 1.0 + r, **kw)
t2 = time.perf_counter()
print(f"{t1 - t0:.2f} {(t2 - t1) / 20 * 1e3:.1f}")
"""


def run(args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="also the default (non-quick) verify run")
    a = ap.parse_args()
    print(f"{'task':36} {'state cold s':>12} {'state warm ms':>13} {'verify quick s':>14}"
          + (f" {'verify full s':>13}" if a.full else ""))
    for task in TASKS:
        _, out = run(["-c", STATE, task])
        cold, warm = out.stdout.split()
        tq, oq = run(["-m", "numerics.verify", "--task", task, "--quick"])
        row = f"{task:36} {float(cold):12.2f} {float(warm):13.1f} {tq:11.1f}{'' if oq.returncode == 0 else ' FAIL'}"
        if a.full:
            tf, of = run(["-m", "numerics.verify", "--task", task])
            row += f" {tf:13.1f}{'' if of.returncode == 0 else ' FAIL'}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
