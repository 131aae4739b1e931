"""A sweep on a task file (issue 26 item 6): the task's canonical text is the sweep's setting and part
of each run's identity, so local workers rebuild the task from it; a run lost (as by kill -9) is
recomputed by --resume to byte-identical results; a task file changed since is refused."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "examples" / "query-copies-file.toml"


def _sweep(task, out, *extra):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "numerics.experiments", "sweep", "--task", str(task),
                           "--params", "M=4,b=2,n=10", "--parameterizations", "CACO", "--ratios", "1,10",
                           "--seeds", "2", "--target-loss", "1.0", "--no-theory", "--quiet",
                           "--output", str(out), *extra], capture_output=True, text=True, env=env, timeout=1200)


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_task_file_sweep_resumes_to_identical_results(tmp_path, workers):
    task = tmp_path / "task.toml"
    shutil.copy(EXAMPLE, task)
    out = tmp_path / "out"
    first = _sweep(task, out, "--workers", workers)
    assert first.returncode == 0, first.stderr
    results = (out / "results.csv").read_bytes()
    runs = sorted((out / "runs").iterdir())
    assert len(runs) >= 2
    runs[0].unlink()                                  # a run lost, as by kill -9 before it was stored
    (out / "results.csv").unlink()
    again = _sweep(task, out, "--workers", workers, "--resume")
    assert again.returncode == 0, again.stderr
    assert (out / "results.csv").read_bytes() == results
    task.write_text(EXAMPLE.read_text().replace("R = 5", "R = 4"))
    changed = _sweep(task, out, "--workers", workers, "--resume")
    assert changed.returncode == 2 and changed.stderr.count("\n") == 1
    assert "the task file differs" in changed.stderr
    assert (out / "results.csv").read_bytes() == results
