r"""Plain SGD on online batches, vectorized over the seeds of one configuration (Figure 2, the sweep).

:func:`train_fig2` trains the count model of any task for several seeds at once, their
parameters stacked: one batched step (:func:`numerics.experiments.models.loss_and_grad`) for
all.  Each seed's :func:`numpy.random.default_rng` ``(seed)`` stream gives its initialization,
then its batches epoch by epoch; every operation acts seed by seed, so a seed's numbers are
the same alone or stacked, on any worker.

Update rule (no momentum, no weight decay): for a parameter of circuit
:math:`c \in \{QK, OV\}` at global step :math:`t` (0-based) of
:math:`T = \text{epochs} \times \text{steps\_per\_epoch}`,

.. math::

    W \leftarrow W - \eta_c(t)\, \nabla_W L_t, \qquad
    \eta_{OV}(t) = \eta_{OV}, \quad
    \eta_{QK}(t) = \eta_{QK}\Bigl(1 + (F - 1)\frac{t}{T}\Bigr),

with the QK ramp factor :math:`F` (1: no ramp), where :math:`L_t` is the mean
cross-entropy of the step's batch.

Stop rules (:mod:`numerics.experiments.stopping`, checked after every epoch, per seed):
the authors' (``stop="authors"``), none (``"none"``), or a target loss (``target_loss``,
the sweep's); ``max_steps`` caps the number of steps (the last epoch may be partial).
"""
from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass

import numpy as np

from derivations.core.vocabulary import check_parameterization, check_positive

from ..validation import check_int
from . import models, precision, sampler, task_sampling
from .cross_entropy import target_index
from .stopping import LOG_EVERY, MAX_SGD_STEPS, STOP_RULES, AuthorsStopRule, check_total_steps, target_reached

__all__ = [
    "DTYPES", "Fig2Config", "published_fig2_defaults", "RUN_STATUSES", "check_seeds", "train_fig2", "eval_rng",
    "qk_rates",
]

#: Floating types of the SGD step (:class:`Fig2Config` ``dtype``): float64, the default and bitwise
#: reproducible, or float32 (the authors trained in float32; :mod:`numerics.experiments.precision`).
DTYPES = ("float64", "float32")

# published row-1 schedules and seeds (spec: experiments.md)
_PUBLISHED_ROW1 = {
    "FAFO": dict(epochs=2500, steps_per_epoch=250, seeds=(1234,)),
    "FACO": dict(epochs=2500, steps_per_epoch=250, seeds=(1234,)),
    "CAFO": dict(epochs=5000, steps_per_epoch=200, seeds=(1234, 1235, 1236, 1237, 1238)),
    "CACO": dict(epochs=2500, steps_per_epoch=200, seeds=(1234, 1235, 1236)),
}


def published_fig2_defaults(parameterization: str) -> dict:
    """Epochs, steps per epoch and seeds of the published equal-rate (row-1) run.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    dict
        ``epochs``, ``steps_per_epoch``, ``seeds`` (a list).

    Raises
    ------
    ValueError
        Unknown parameterization.
    """
    check_parameterization(parameterization)
    d = _PUBLISHED_ROW1[parameterization]
    return dict(epochs=d["epochs"], steps_per_epoch=d["steps_per_epoch"], seeds=list(d["seeds"]))


@dataclass(frozen=True)
class Fig2Config:
    """Settings of a Figure-2 training run (everything but the seed).

    Defaults: the published row-1 setting (rates 0.01, seq_len 64, batch 32, the
    authors' stop rule and initialization) with the FAFO and FACO schedule, 2500 x 250
    steps; CAFO's and CACO's published schedules differ (:func:`published_fig2_defaults`).
    """

    parameterization: str = "CACO"
    lr_qk: float = 0.01
    lr_ov: float = 0.01
    qk_ramp: float = 1.0
    seq_len: int = 64
    batch_size: int = 32
    epochs: int = 2500
    steps_per_epoch: int = 250
    stop: str = "authors"
    init: str = "authors"
    eval_batches: int = 200
    target_loss: float | None = None
    max_steps: int | None = None
    #: The task trained (:func:`numerics.experiments.task_sampling.sampled_task`) and its
    #: parameter values (sorted pairs).
    task: str = task_sampling.DEFAULT_TASK
    task_params: tuple = ()
    dtype: str = "float64"

    def __post_init__(self):
        check_parameterization(self.parameterization)
        check_positive("lr_qk", self.lr_qk)
        check_positive("lr_ov", self.lr_ov)
        check_positive("qk_ramp", self.qk_ramp)
        check_int("seq_len", self.seq_len, 3)
        check_int("batch_size", self.batch_size, 1)
        check_int("epochs", self.epochs, 1, MAX_SGD_STEPS)
        check_int("steps_per_epoch", self.steps_per_epoch, 1, MAX_SGD_STEPS)
        check_int("eval_batches", self.eval_batches, 1)
        if self.stop not in STOP_RULES:
            raise ValueError(f"stop must be one of {STOP_RULES}, got {self.stop!r}")
        if self.init not in models.INITS:
            raise ValueError(f"init must be one of {models.INITS}, got {self.init!r}")
        if self.target_loss is not None:
            check_positive("target_loss", self.target_loss)
        if self.max_steps is not None:
            check_int("max_steps", self.max_steps, 1, MAX_SGD_STEPS)
        check_total_steps(self.epochs, self.steps_per_epoch, self.max_steps)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        self._check_task()
        st = self.sampled_task
        precision.check_rates(self.lr_qk, self.lr_ov, self.qk_ramp, st.score_divisor, self.dtype,
                              divisor=lambda: task_sampling.divisor_parameter(st))

    def _check_task(self):
        st = task_sampling.sampled_task(self.task, self.task_params)   # ValueError if it cannot be sampled
        object.__setattr__(self, "task_params", st.params)

    @property
    def sampled_task(self):
        """The :class:`~numerics.experiments.task_sampling.SampledTask` trained."""
        return task_sampling.sampled_task(self.task, self.task_params)

    def to_dict(self) -> dict:
        """The settings as a dict: a run's identity (its job key and ``settings``); the task
        (:func:`~numerics.experiments.task_sampling.task_settings`) and the ``dtype`` are named
        only when they are not the defaults."""
        out = asdict(self)
        del out["task"], out["task_params"]
        out.update(task_sampling.task_settings(self.sampled_task))
        if out["dtype"] == DTYPES[0]:
            del out["dtype"]
        return out

    @property
    def total_steps(self) -> int:
        """Scheduled steps (``epochs * steps_per_epoch``, capped by ``max_steps``:
        :func:`~numerics.experiments.stopping.check_total_steps`)."""
        return check_total_steps(self.epochs, self.steps_per_epoch, self.max_steps)


def eval_rng(seed: int) -> np.random.Generator:
    """The evaluation stream of a seed: a child of ``SeedSequence(seed)``,
    independent of the training stream ``default_rng(seed)``.

    Parameters
    ----------
    seed : int

    Returns
    -------
    numpy.random.Generator
    """
    return np.random.default_rng(np.random.SeedSequence(int(seed)).spawn(1)[0])


def check_seeds(seeds, *, distinct: bool = True) -> list:
    """The seeds as a list of ints.

    Parameters
    ----------
    seeds : iterable of int
    distinct : bool
        Refuse a seed given twice.

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        Not a list, an empty list, a seed that is not an integer >= 0, or (``distinct``) a
        repeated seed.
    """
    if isinstance(seeds, (str, bytes, dict)) or not np.iterable(seeds):
        raise ValueError(f"seeds must be a non-empty list of integers >= 0; got {seeds!r}")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must be a non-empty list of integers >= 0")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
            raise ValueError(f"seeds must be integers >= 0, got {s!r}")
    if distinct and len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    return [int(s) for s in seeds]


#: ``status`` of a run: a stop rule fired (the authors' rule or the target loss), the whole
#: schedule was trained, or a non-finite training loss stopped the run (or its parameters were not
#: finite where it stopped).
RUN_STATUSES = ("reached", "completed", "diverged")


def _finite(params, j, keys) -> bool:
    """Whether every parameter of stacked run ``j`` is finite."""
    return all(np.isfinite(params[key][j]).all() for key in keys)


def _draw_epoch(st, rngs, active, k_this, c, tickets):
    """Draw one epoch's batches of every active run from its own generator: the classes
    ``(K, S, B)`` are returned, the tickets written into ``tickets`` ``(K, S, B, T)``.

    Each run's draw is copied into the stacked buffer at once and freed before the next
    run draws, so every draw reuses the same memory (no fresh pages every epoch)."""
    classes = []
    for j, i in enumerate(active):
        cls, tick = sampler.draw_tickets(st, rngs[i], k_this, c.batch_size, c.seq_len)
        tickets[:, j] = tick
        classes.append(cls)
    return np.stack(classes, axis=1)


class _EpochBatch:
    """One epoch's batches of the runs still training, with the trainer's gather indices.

    The arrays are built once per epoch, reusing ``buffers`` (a dict kept by the
    caller) when the epoch has the same shape: no fresh pages every epoch."""

    def __init__(self, st, rngs, active, k_this, c, params, buffers):
        lead = (k_this, len(active), c.batch_size)
        if buffers.get("lead") != lead:
            # counts are small integers: uint16 holds them exactly in a quarter of float64's memory,
            # and the attention's float64 product with them is the same number
            uint16 = np.dtype(np.uint16)
            counts_dtype = uint16 if c.seq_len - 1 <= sampler.EXACT_COUNT_DTYPES[uint16] else np.float64
            buffers.update(lead=lead, counts=np.empty(lead + (st.T,), dtype=counts_dtype),
                           tickets=np.empty(lead + (c.seq_len - 2,), dtype=st.ticket_dtype))
        # each seed draws from its own stream; all seeds' draws become counts in one pass
        classes = _draw_epoch(st, rngs, active, k_this, c, buffers["tickets"])
        batch = sampler.batch_from_tickets(st, classes, buffers["tickets"], out=buffers["counts"])
        self.counts, self.query, self.target = batch.counts, batch.query, batch.target   # (K, S, B, ...)
        qids = np.flatnonzero(np.bincount(self.query.reshape(-1)))   # sorted distinct
        # the update's index of those rows of W_QK or W_Q: a slice when consecutive
        # (the authors' queries 5..8), a view instead of a fancy-indexed copy and write-back
        qsel = slice(qids[0], qids[-1] + 1) if qids[-1] - qids[0] + 1 == qids.size else qids
        self.onehot_t = models.query_onehot_t(self.query, qids)              # (K, S, U, B)
        self.onehot_t = self.onehot_t.astype(next(iter(params.values())).dtype, copy=False)   # the step's dtype
        # flat gather indices of every step: score-table row of each sequence, target logit
        self.slots = models._query_slots(self.query, qids, lead=(len(active),))   # (K, S, B)
        tidx = target_index(self.target, -2, st.n_out).reshape(k_this, -1)   # class-major logits
        tidx -= (np.arange(k_this) * tidx.shape[1] * st.n_out)[:, None]
        self.tidx = tidx
        # W_QK's score rows are read through the same index (a view when it is a slice);
        # factorized attention gathers the columns of W_Q^T by the id array (a fresh array)
        self.table_ids = qsel if "W_QK" in params else qids
        # each parameter and the block its step covers when the step is sparse: the query
        # rows of W_QK or W_Q (every other step covers its whole matrix)
        rows = (Ellipsis, qsel, slice(None))
        self.blocks = {"W_QK": rows, "W_Q": rows}


def qk_rates(lr_qk, ramp, step: int, scheduled: int, k_this: int) -> list:
    r"""The QK learning rate of each of ``k_this`` steps from step ``step``: ``lr_qk`` times
    the linear ramp :math:`1 + (F - 1)\,t/T` (``ramp`` :math:`F`, ``scheduled`` :math:`T`),
    or ``lr_qk`` itself when there is no ramp (:math:`F = 1` for every run).

    Parameters
    ----------
    lr_qk, ramp : float or ndarray
        Shared by the stack, or per run ``(S, 1, 1)``.
    step, scheduled, k_this : int

    Returns
    -------
    list
    """
    if not np.any(np.asarray(ramp) != 1.0):
        return [lr_qk] * k_this
    return [lr_qk * (1.0 + (ramp - 1.0) * (step + k) / scheduled) for k in range(k_this)]


def _train_epoch(st, params, batch, rates, step, scheduled, n_active, k_this):
    """``k_this`` SGD steps on ``batch`` (in place); returns the ``(S, K)`` step losses.

    ``rates``: ``(lr_qk, lr_ov, qk_ramp)``, floats shared by the stack, or per-run arrays
    ``(S, 1, 1)`` (:func:`train_stack`): every operation on them is the same IEEE operation
    on each run's own rate, so a run's numbers do not depend on the rates stacked with it."""
    losses = np.empty((n_active, k_this))    # (S, K): row sums are stack-independent
    plan = [(w, batch.blocks.get(key, Ellipsis)) for key, w in params.items()]
    lr_qk0, lr_ov, ramp = rates
    for k, lr_qk in enumerate(qk_rates(lr_qk0, ramp, step, scheduled, k_this)):
        loss, steps = models.loss_and_grad(st, params, batch.counts[k], batch.query[k], batch.target[k],
                                           _query_set=(batch.table_ids, batch.onehot_t[k], batch.slots[k],
                                                       batch.tidx[k]),
                                           _sparse_qk=True, _rates=(lr_qk, lr_ov))
        losses[:, k] = loss
        # steps[key] = learning rate x gradient, only the query rows for W_QK/W_Q
        for (w, block), d in zip(plan, steps.values()):
            if d.shape == w.shape:
                w -= d
            else:
                w[block] -= d
    return losses


class _Runs:
    """Book-keeping of the stacked runs: which still train, their losses, stops and final parameters."""

    def __init__(self, seeds, c, record_losses=()):
        n = len(seeds)
        self.seeds = seeds
        self.record_losses = tuple(record_losses)
        self.marks = [{} for _ in range(n)]          # per run: {loss: {"steps", "params"}}
        self.active = np.arange(n)                  # indices (into seeds) of runs still training
        self.epoch_losses = [[] for _ in range(n)]
        self.stopped_epoch = [None] * n
        self.status = ["completed"] * n
        self.steps_done = [0] * n
        self.final = [None] * n
        self.authors = AuthorsStopRule(n, c.steps_per_epoch) if c.stop == "authors" else None
        self.target = c.target_loss

    def record(self, epoch, sums, k_this) -> np.ndarray:
        """Log one epoch's loss sums ``(S,)``; return which active runs stop now."""
        for j, i in enumerate(self.active):
            self.epoch_losses[i].append(float(sums[j] / k_this))
            self.steps_done[i] += k_this
        stop = np.zeros(len(self.active), dtype=bool)
        if self.authors is not None:
            stop |= self.authors.update(epoch, sums)
        if self.target is not None:
            stop |= target_reached(sums, np.full(len(self.active), k_this), self.target)
        diverged = ~np.isfinite(sums)
        for j in np.flatnonzero(stop | diverged):
            i = self.active[j]
            self.status[i] = "diverged" if diverged[j] else "reached"
            self.stopped_epoch[i] = None if diverged[j] else epoch + 1
        return stop | diverged

    def mark(self, params, sums, k_this, keys) -> None:
        """Keep the state of each active run whose epoch-mean loss first reached a recorded loss
        (the target-loss rule, :func:`~numerics.experiments.stopping.target_reached`), unless its
        parameters are not finite there (the run then ends diverged: a non-finite number stays so)."""
        for loss in self.record_losses:
            hit = target_reached(sums, np.full(len(self.active), k_this), loss)
            for j in np.flatnonzero(hit):
                i = self.active[j]
                if loss not in self.marks[i] and _finite(params, j, keys):
                    self.marks[i][loss] = {"steps": self.steps_done[i],
                                           "params": {key: params[key][j].copy() for key in keys}}

    def _keep_final(self, params, j, keys) -> None:
        """Keep the final parameters of stacked run ``j``; parameters that are not finite (the
        last update overflowed) make it diverged."""
        i = self.active[j]
        self.final[i] = {key: params[key][j].copy() for key in keys}
        if self.status[i] != "diverged" and not _finite(params, j, keys):
            self.status[i], self.stopped_epoch[i] = "diverged", None

    def drop(self, params, stop, keys) -> dict:
        """Keep the final parameters of the runs that ``stop``; return the others' parameters."""
        for j in np.flatnonzero(stop):
            self._keep_final(params, j, keys)
        keep = ~stop
        self.active = self.active[keep]
        if self.authors is not None:
            self.authors.select(keep)
        return {key: v[keep] for key, v in params.items()}

    def results(self, params, keys) -> list:
        for j in range(len(self.active)):
            self._keep_final(params, j, keys)
        out = []
        for i, s in enumerate(self.seeds):
            el = self.epoch_losses[i]
            log = [float(np.mean(el[b:b + LOG_EVERY])) for b in range(0, len(el), LOG_EVERY)]
            out.append({"seed": s, "steps": self.steps_done[i], "stopped_epoch": self.stopped_epoch[i],
                        "status": self.status[i], "epoch_loss": el, "loss_log": log, "params": self.final[i],
                        **({"marks": self.marks[i]} if self.record_losses else {})})
        return out


def train_fig2(config: Fig2Config, seeds, *, progress=None, record_losses=()) -> list:
    """Train one configuration for several seeds, stacked; return one dict per seed.

    Parameters
    ----------
    config : Fig2Config
    seeds : sequence of int
        Each seed ``s`` gets ``numpy.random.default_rng(s)`` for its
        initialization and training batches.
    progress : callable, optional
        Called as ``progress(epochs_done)`` after every epoch (e.g. a tqdm
        bar's ``update``).
    record_losses : sequence of float, optional
        Losses at which to keep each run's state without stopping it: the
        first epoch whose mean training loss is at most the loss (the test of
        the target-loss rule; each finite, > 0). Training itself is unchanged (same numbers).

    Returns
    -------
    list of dict
        In the order of ``seeds``, with ``seed``, ``steps`` (SGD
        steps taken), ``stopped_epoch`` (number of epochs trained when a stop rule
        fired, else None), ``status`` (:data:`RUN_STATUSES`: ``"reached"`` when a
        stop rule fired, ``"completed"`` when the schedule ended first,
        ``"diverged"`` when an epoch's training loss was not finite, or its parameters
        were not finite where it stopped: that run stops there, the others go on, their numbers unchanged),
        ``epoch_loss`` (mean training loss of every epoch trained), ``loss_log`` (mean training loss of
        each block of :data:`LOG_EVERY` epochs; the last may be partial) and
        ``params`` (final parameters, :func:`~numerics.experiments.models.param_shapes`; not finite
        for a diverged run);
        with ``record_losses``, ``marks``: ``{loss: {"steps", "params"}}`` for each
        recorded loss the run reached with finite parameters (steps trained by then, the parameters then).

    Raises
    ------
    ValueError
        Bad ``seeds``, ``config`` not a :class:`Fig2Config`, or ``record_losses`` not a
        sequence of finite losses > 0.
    """
    seeds = check_seeds(seeds)
    if not isinstance(config, Fig2Config):
        raise ValueError(f"config must be a Fig2Config, got {type(config).__name__}")
    return _train(config, seeds, (config.lr_qk, config.lr_ov, config.qk_ramp), progress, record_losses)


def _train(c, seeds, rates, progress, record_losses) -> list:
    """The loop of :func:`train_fig2` and :func:`numerics.experiments.stack.train_stack`:
    the runs of ``seeds`` (one generator each) with ``rates`` (see :func:`_train_epoch`)."""
    if isinstance(record_losses, (str, bytes)) or not np.iterable(record_losses):
        raise ValueError(f"record_losses must be a sequence of losses > 0; got {record_losses!r}")
    record_losses = [check_positive("record_losses", x) for x in record_losses]
    rngs = [np.random.default_rng(s) for s in seeds]
    st = c.sampled_task
    inits = [models.init_params(st, c.parameterization, c.init, r) for r in rngs]
    params = {k: np.stack([p[k] for p in inits]) for k in inits[0]}
    params, rates = precision.step_arrays(params, rates, c.dtype)
    keys = list(params)
    scheduled = c.epochs * c.steps_per_epoch     # the ramp's T (the notebooks' total_steps)
    total = c.total_steps
    runs = _Runs(seeds, c, record_losses)
    buffers = {}                                 # per-epoch arrays, reused
    step = 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):   # divergence is reported, not warned
        for epoch in range(c.epochs):
            k_this = min(c.steps_per_epoch, total - step)
            if k_this <= 0:
                break
            batch = _EpochBatch(st, rngs, runs.active, k_this, c, params, buffers)
            losses = _train_epoch(st, params, batch, rates, step, scheduled, len(runs.active), k_this)
            step += k_this
            sums = losses.sum(axis=1)
            stop = runs.record(epoch, sums, k_this)
            if record_losses:
                runs.mark(params, sums, k_this, keys)
            if progress is not None:
                progress(1)
            if stop.any():
                params = runs.drop(params, stop, keys)
                # per-run rates leave the stack with their runs (the stack is compacted)
                rates = tuple(r[~stop] if isinstance(r, np.ndarray) else r for r in rates)
                if runs.active.size == 0:
                    break
    return precision.as_float64(runs.results(params, keys))
