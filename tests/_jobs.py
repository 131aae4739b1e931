"""Job functions for the runner tests.

They live in an importable module (not in a test file's namespace) because
worker processes and Dask workers import a job function by its module name;
pytest puts ``tests/`` on ``sys.path`` and the workers inherit it.
"""
import os

import numpy as np


def sgd_job(job):
    """A small deterministic numeric job: SGD on softmax regression over 50 classes with random teacher labels.

    Uses the same kinds of operations as the experiments (matrix products,
    softmax, a seeded ``numpy.random.Generator`` drawing fresh batches), so
    bitwise agreement across backends here means something.
    """
    rng = np.random.default_rng(job["seed"])
    dim = job.get("dim", 50)
    teacher = rng.standard_normal((dim, dim))
    weights = rng.uniform(-1, 1, (dim, dim)) / np.sqrt(dim)
    losses = []
    for _ in range(job.get("steps", 200)):
        x = rng.standard_normal((32, dim))
        labels = np.argmax(x @ teacher.T, axis=1)
        logits = x @ weights.T
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        losses.append(float(-log_p[np.arange(32), labels].mean()))
        grad_logits = np.exp(log_p)
        grad_logits[np.arange(32), labels] -= 1.0
        weights -= job.get("lr", 0.05) * (grad_logits.T @ x) / 32
    return {"seed": job["seed"], "losses": losses, "checksum": float(np.sum(weights))}


def counted_job(job):
    """Appends one line to ``job["log"]`` per call (to count calls across processes), returns ``x**2``."""
    with open(job["log"], "a", encoding="utf-8") as handle:
        handle.write(f"{job['x']}\n")
    return {"x": job["x"], "square": job["x"] ** 2}


def failing_job(job):
    """Raises for ``x == 3``."""
    if job["x"] == 3:
        raise ZeroDivisionError("x is 3")
    return {"x": job["x"]}


def killed_job(job):
    """Returns ``{"x": x}`` at once, but for ``job["kill"]``: waits ``job["sleep"]`` seconds, then kills its
    own process with SIGKILL (as the kernel kills a process when memory runs out)."""
    import signal
    import time
    if job.get("kill"):
        time.sleep(job.get("sleep", 0.0))
        os.kill(os.getpid(), signal.SIGKILL)
    return {"x": job["x"]}


def slow_job(job):
    """Sleeps ``job["sleep"]`` seconds (for interruption tests); first touches ``<job["pids"]>/pid-<pid>`` if given."""
    import time
    if "pids" in job:
        open(os.path.join(job["pids"], f"pid-{os.getpid()}"), "w").close()
    time.sleep(job.get("sleep", 0.0))
    return {"x": job["x"]}


def epoch_job(job, progress=None):
    """Reports ``job["epochs"]`` epochs with ``progress(1)`` (if given) and returns their count."""
    for _ in range(job["epochs"]):
        if progress is not None:
            progress(1)
    return {"x": job["x"], "reported": progress is not None}


def failing_job_with_progress(job, progress=None):
    """:func:`failing_job` that reports an epoch first."""
    if progress is not None:
        progress(1)
    return failing_job(job)
