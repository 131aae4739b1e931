"""Cold-start wall time of ``python -m derivations.print_dynamics`` (fresh interpreter each run).

Run: ``python benchmarks/print_dynamics_cold_start.py [repeats]``. Goal: under 2 s.
"""
import subprocess
import sys
import time


def main(repeats: int = 5) -> None:
    for args in ([], ["--format", "json"], ["--params", "m=5,n=50,b=50,M=20", "--ratio", "10", "--loss", "0.01"]):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "derivations.print_dynamics", *args],
                           check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
        print(f"print_dynamics {' '.join(args) or '(no arguments)':<55} best {min(times):.3f} s  "
              f"median {sorted(times)[len(times) // 2]:.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
