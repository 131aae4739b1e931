"""Cold-start wall time of ``python -m derivations.print_dynamics`` (fresh interpreter each run).

Run: ``python benchmarks/print_dynamics_cold_start.py [repeats] [root]`` from the repository root
(``root``: another checkout to compare with). Goal: under 0.5 s without arguments (the printed texts
of a fresh printed-results cache, no SymPy imported; issue 24).
"""
import os
import subprocess
import sys
import time


def main(repeats: int = 5, root: str = ".") -> None:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
    for args in ([], ["--format", "json"], ["--params", "m=5,n=50,b=50,M=20", "--ratio", "10", "--loss", "0.01"]):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "derivations.print_dynamics", *args],
                           check=True, stdout=subprocess.DEVNULL, env=env, cwd=root)
            times.append(time.perf_counter() - t0)
        print(f"print_dynamics ({root}) {' '.join(args) or '(no arguments)':<55} best {min(times):.3f} s  "
              f"median {sorted(times)[len(times) // 2]:.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2] if len(sys.argv) > 2 else ".")
