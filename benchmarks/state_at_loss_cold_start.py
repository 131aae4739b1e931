"""Cold-start wall time of the closed-form state in a fresh interpreter.

Run: ``python benchmarks/state_at_loss_cold_start.py [repeats] [root]`` from the
repository root (``root``: another checkout to compare with). Goal: < 0.6 s and
no SymPy imported (issue 8). Each run is a new process doing
``from numerics.dynamics.closed_form import state_at_loss; state_at_loss(0.5, 10.0)``.
"""
import os
import subprocess
import sys
import time

CODE = ("import sys\n"
        "from numerics.dynamics.closed_form import state_at_loss\n"
        "state_at_loss(0.5, 10.0)\n"
        "print('sympy' in sys.modules)\n")


def main(repeats: int = 5, root: str = ".") -> None:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
    times, sympy_loaded = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CODE], check=True, capture_output=True, text=True,
                             env=env, cwd=root)
        times.append(time.perf_counter() - t0)
        sympy_loaded = out.stdout.strip()
    print(f"state_at_loss cold start ({root}): best {min(times):.3f} s  "
          f"median {sorted(times)[len(times) // 2]:.3f} s  sympy imported: {sympy_loaded}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2] if len(sys.argv) > 2 else ".")
