r"""A sampled task in its expected-count limit: the theory beside the SGD runs.

In the **expected-count limit** a class-:math:`k` sequence of a task
(:class:`numerics.experiments.task_sampling.SampledTask`, the authors' by default)
is replaced by its expected count vector

.. math:: \bar n_k = (\mathrm{seq\_len} - 2)\,p_k + [\text{query in context}]\, e_{q_k}

(:func:`numerics.experiments.task_sampling.expected_counts`), and the population loss is
the class average of the cross-entropies of these "mean sequences"
(:class:`numerics.model.TaskModel` of
:func:`~numerics.experiments.task_sampling.theory_instance`, with the softmax taken with
multiplicities; factorized circuits with :math:`d` hidden units, as the SGD model's).
The prediction is the gradient flow of that loss on the full matrices, :math:`\dot W = -\eta_W\nabla_W L` with
:math:`\eta_{OV} = \mathrm{lr}_{OV}`, :math:`\eta_{QK} = r\,\mathrm{lr}_{OV}`
(both factors of a circuit share its rate), so flow time is measured in SGD
steps.  It is integrated at :math:`\mathrm{lr}_{OV} = 1` and its time divided
by :math:`\mathrm{lr}_{OV}` (the path does not depend on the rate), with
:func:`numerics.dynamics.training.gradient_flow` (DOP853), until the loss first
reaches the lowest target; every higher target is a non-terminal event of the
same flow, so one flow answers every target.

**Like with like.** A seed's flow starts from exactly the matrices the SGD
model of that seed starts from: :func:`init_matrices` calls the SGD model's
builder :func:`numerics.experiments.models.init_params` with
``numpy.random.default_rng(seed)`` (what :func:`~numerics.experiments.sgd.train_fig2`
does); both models read them alike (:math:`W_{QK} = W_Q W_K^\top`,
:math:`W_{OV} = W_O W_V`).

**Where the attention goes** (:func:`attention_shares`, read off where the loss
reaches each target): the relevant tokens, the query's own token (its own
position and its copies among the common tokens of the context: the models have
no positions, so the copies are one mechanism) and all other positions; class
averages of :func:`numerics.experiments.measure.attention_shares`, summing to 1.

:func:`closed_form_attention` adds the engine's own answer (closed form or reduced flow) from
zero initialization, for CACO, where the engine answers the task
(``engine_state`` of :class:`~numerics.experiments.task_sampling.SampledTask`).

What the limit leaves out: the sampling noise of SGD and the difference between
the softmax of the expected counts and the expected softmax of sampled counts
(a Jensen gap of relative size :math:`\sim 1/\sqrt{\mathrm{seq\_len}}` per type).

Supported inputs (answered in bounded time; anything else raises a
``ValueError`` naming the range before any work): ratios in
:data:`RATIO_RANGE`, targets in ``[TARGET_LOSS_MIN, initial loss)``, identity
scales in :data:`INIT_SCALE_RANGE`, ``lr_ov`` in :data:`LR_OV_RANGE`.

>>> from numerics.experiments.task_sampling import AUTHORS
>>> r = flow_to_losses(AUTHORS, "CACO", 1.0, [1.0], init="identity")["records"][0]
>>> r["reached"], bool(0 < r["relevant_attention"] < 1)
(True, True)
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np

from derivations.core.vocabulary import SHARES, check_positive

from ..validation import check_in_range, check_int, shown_number
from . import measure, models, proxies, task_sampling
from .stopping import target_losses

__all__ = ["RATIO_RANGE", "TARGET_LOSS_MIN", "INIT_SCALE_RANGE", "LR_OV_RANGE", "task_model",
           "closed_form_attention", "init_matrices", "lowest_initial_loss", "attention_shares",
           "check_ratio", "check_target_losses", "check_init_scale", "check_lr_ov", "flow_to_losses", "STOPPED_BY"]

#: Learning-rate ratios the flow answers in bounded time (FAFO from a uniform
#: start needs ~10^4 gradient evaluations at r = 50 and fails to finish beyond 100).
RATIO_RANGE = (1e-3, 50.0)
#: Lowest target loss: below it the cross-entropy ``logsumexp(z) - z_y`` of the flow
#: state is dominated by rounding.
TARGET_LOSS_MIN = 1e-6
#: Scales of the identity initialization the flow answers (a factorized circuit of
#: scale s starts at s^2 and escapes in a time that grows with log 1/s).
INIT_SCALE_RANGE = (1e-12, 1.0)
#: OV learning rates (they only convert flow time to steps; the range keeps steps finite).
LR_OV_RANGE = (1e-12, 1e12)
#: Why the expected-count flow's inputs have these ranges (for the messages).
_BOUNDED = "(the range the expected-count flow answers in bounded time)"


def init_matrices(st, model, init="identity", scale=models.IDENTITY_SCALE, seed=1234) -> dict:
    r"""The initial matrices of SGD seed ``seed`` in ``model``'s convention.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    model : numerics.model.TaskModel
        Of :func:`task_model` (its parameterization).
    init : {"authors", "identity", "uniform"}
    scale : float
        Of the identity matrices.
    seed : int
        >= 0.

    Returns
    -------
    dict
        ``models.init_params(st, P, init, numpy.random.default_rng(seed), identity_scale=scale)``
        (the SGD model's own builder).

    Raises
    ------
    ValueError
        A scale that is not a positive number, an unknown ``init``, ``seed`` not an integer >= 0.
    """
    scale, seed = check_positive("init_scale", scale), check_int("seed", seed, 0)
    return models.init_params(st, model.parameterization, init, np.random.default_rng(seed), identity_scale=scale)


def task_model(st, parameterization, ratio, *, lr_ov=0.01, seq_len=None):
    """The expected-count model of a task.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    ratio : float
        :math:`\\eta_{QK}/\\eta_{OV}`.
    lr_ov : float
        :math:`\\eta_{OV}`.
    seq_len : int, optional
        Default the task's own length.

    Returns
    -------
    numerics.model.TaskModel
        Of :func:`numerics.experiments.task_sampling.theory_instance`.

    Raises
    ------
    ValueError
        A rate that is not positive, or no ``seq_len`` for a task without a length of its own.
    """
    ratio, lr_ov = check_positive("ratio", ratio), check_positive("lr_ov", lr_ov)
    seq_len = st.own_seq_len if seq_len is None else seq_len
    if seq_len is None:
        raise ValueError(f"task {st.name!r} has no integer length of its own: give seq_len")
    from ..model import TaskModel   # SciPy's special functions: not needed to check a command's input

    return TaskModel(task_sampling.theory_instance(st, seq_len), parameterization,
                     eta_QK=ratio * lr_ov, eta_OV=lr_ov)


def closed_form_attention(st, parameterization, ratio, target_losses, seq_len) -> dict:
    r"""The engine's own answer for an engine task: the relevant-token attention where the
    CACO flow from zero initialization first reaches each loss
    (:func:`numerics.dynamics.state.state_at_loss`: the paper's closed form, or the one a task
    inherits through the engine's rate map, else the engine's reduced flow).

    It describes the flow of this module from the ``identity`` initialization
    (:math:`10^{-6} I`, zero to within that scale) at the task's own length, where the expected
    counts are the engine's instance. Returns ``{"method", "reason", "relevant_attention"}``
    (``{target: alpha}``): ``method`` None where there is no such answer, with ``reason`` the
    engine's own refusal where it was asked (a task it does not reduce, a value outside the range
    its method is tested on), and None where it is not asked (another parameterization or length).

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    parameterization : str
    ratio : float
    target_losses : sequence of float
    seq_len : int

    Returns
    -------
    dict
    """
    def none(reason=None):
        return {"method": None, "reason": reason, "relevant_attention": dict.fromkeys(target_losses)}

    if parameterization != "CACO" or seq_len != st.own_seq_len:
        return none()
    from ..dynamics.state import state_at_loss

    try:
        state = state_at_loss(np.asarray(target_losses, dtype=float), float(ratio), task=st.name,
                              **dict(st.params))
    except (ValueError, RuntimeError) as exc:
        return none(str(exc))
    alpha = np.atleast_1d(np.asarray(state.alpha, dtype=float))
    return {"method": state.method, "reason": None,
            "relevant_attention": {t: float(a) for t, a in zip(target_losses, alpha)}}


def attention_shares(model, params) -> dict:
    """Class averages (weights of the instance) of the three attention shares of
    :func:`numerics.experiments.measure.attention_shares` in the expected-count model.

    Parameters
    ----------
    model : numerics.model.TaskModel
    params : dict
        In the model's convention.

    Returns
    -------
    dict
        ``{share: float}`` (:data:`derivations.core.vocabulary.SHARES`).
    """
    inst = model.instance
    shares = measure.attention_shares(model.attention(params), inst.query, inst.relevant)
    return {k: float(v @ inst.weights) for k, v in shares.items()}


def lowest_initial_loss(st, parameterizations, init, seeds, *, seq_len=None, init_scale=models.IDENTITY_SCALE,
                        progress=None, stop_at=None) -> tuple:
    """The lowest initial loss of the runs ``parameterizations x seeds``: the expected-count loss
    (:func:`task_model`) at each run's :func:`init_matrices`.

    One model per parameterization; an initialization that draws nothing
    (:func:`~numerics.experiments.models.draws`) gives every seed the same matrices, so its first
    seed stands for all of them. A run costs a draw and a loss (about 0.2 ms); where only whether
    the lowest loss is at most a bound matters (a target refused), ``stop_at`` ends the search at
    the first run that answers it.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    parameterizations : sequence of {"CACO", "CAFO", "FACO", "FAFO"}
    init : {"authors", "identity", "uniform"}
    seeds : sequence of int
        Each >= 0; at least one.
    seq_len : int, optional
        Default the task's own length.
    init_scale : float
    progress : callable, optional
        ``progress(n)`` after each ``n`` runs done (the runs answered by a first seed count too).
    stop_at : float, optional
        Stop at the first run whose initial loss is at most ``stop_at``, and return it.

    Returns
    -------
    (parameterization, seed) : tuple
        The first run (parameterizations, then seeds, in order) of the lowest loss (with ``stop_at``:
        the first run of a loss at most ``stop_at`` where there is one).
    loss : float

    Raises
    ------
    ValueError
        See :func:`task_model` and :func:`init_matrices` (``seed`` not an integer >= 0); no seed, or an
        initial loss that is not finite.
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must not be empty")
    best = None
    for p in parameterizations:
        model = task_model(st, p, 1.0, lr_ov=1.0, seq_len=seq_len)
        some = seeds if models.draws(p, init) else seeds[:1]
        for k, seed in enumerate(some):
            with np.errstate(all="ignore"):
                loss = model.loss(init_matrices(st, model, init, init_scale, seed))
            if not math.isfinite(loss):      # (scores that overflow)
                raise ValueError(f"the initial loss of {p} seed {seed} is {loss}: the scores of task {st.name!r} at "
                                 f"{','.join(f'{k}={v!r}' for k, v in st.params)} overflow; use values nearer 1")
            if best is None or loss < best[1]:
                best = ((p, seed), loss)
            if stop_at is not None and loss <= stop_at:
                return best
            if progress is not None and (k + 1) % 1000 == 0:
                progress(1000)
        if progress is not None:
            progress(len(seeds) - len(some) + len(some) % 1000)
    return best


def check_ratio(ratio) -> float:
    """``ratio`` as a float in :data:`RATIO_RANGE`, else ``ValueError`` naming the range.

    Parameters
    ----------
    ratio : float

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Not a number in the range.
    """
    return check_in_range("ratio", ratio, *RATIO_RANGE, _BOUNDED, scalar=True)


def check_init_scale(scale) -> float:
    """``scale`` as a float in :data:`INIT_SCALE_RANGE`, else ``ValueError``.

    Parameters
    ----------
    scale : float

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Not a number in the range.
    """
    return check_in_range("init_scale", scale, *INIT_SCALE_RANGE, _BOUNDED, scalar=True)


def check_lr_ov(lr_ov) -> float:
    """``lr_ov`` as a float in :data:`LR_OV_RANGE`, else ``ValueError``.

    Parameters
    ----------
    lr_ov : float

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Not a number in the range.
    """
    return check_in_range("lr_ov", lr_ov, *LR_OV_RANGE, _BOUNDED, scalar=True)


def check_target_losses(targets, initial=None) -> tuple:
    """Targets sorted high to low (the order the flow reaches them).

    Parameters
    ----------
    targets : float or iterable of float
    initial : float, optional
        The initial loss: every target must lie below it.

    Returns
    -------
    tuple of float

    Raises
    ------
    ValueError
        Targets :func:`numerics.experiments.stopping.target_losses` refuses, a target below
        :data:`TARGET_LOSS_MIN` or not below ``initial`` (when given).
    """
    vals = target_losses(targets)
    if min(vals) < TARGET_LOSS_MIN:
        raise ValueError(f"target_loss must be a number in [{TARGET_LOSS_MIN:g}, initial loss) (the range the "
                         f"expected-count flow answers in bounded time); got {min(vals)!r}")
    if initial is not None and max(vals) >= initial:
        raise ValueError(f"target_loss must be below the initial loss {shown_number(initial)}; "
                         f"got {shown_number(max(vals))}")
    return tuple(sorted(vals, reverse=True))


#: Why a flow stopped before a target, by the flow's ``reason`` (:class:`~numerics.dynamics.trajectory.Trajectory`),
#: where it did not level off above it (``"horizon"``: not reached by the end of time).
STOPPED_BY = {"nfev": "budget", "steps": "budget", "failed": "solver", "unresolved": "solver",
              "nonfinite": "overflow"}


def _unreached(target, reason):
    """A target the flow did not reach; ``stopped_by`` (:data:`STOPPED_BY`) where it did not level off."""
    stopped = {"stopped_by": STOPPED_BY[reason]} if reason in STOPPED_BY else {}
    return {"target_loss": target, "reached": False, "steps": None, "loss": None,
            **dict.fromkeys(SHARES), **dict.fromkeys(proxies.THEORY_PROXIES), **stopped}


def flow_to_losses(st, parameterization, ratio, target_losses, *, lr_ov=0.01, seq_len=None,
                   init="authors", init_scale=models.IDENTITY_SCALE, seed=1234, rtol=1e-8,
                   atol=1e-13, max_nfev=500_000) -> dict:
    r"""One gradient flow of the expected-count task from seed ``seed``'s initial
    matrices, read off where the loss first reaches each target.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    ratio : float
        :math:`\eta_{QK}/\eta_{OV}` in :data:`RATIO_RANGE`.
    target_losses : float or sequence of float
        Distinct losses in ``[TARGET_LOSS_MIN, initial loss)`` (any order).
    lr_ov : float
        OV rate: converts flow time to SGD steps (:data:`LR_OV_RANGE`).
    seq_len : int, optional
        Sequence length (>= 3); default the task's own.
    init, init_scale, seed
        See :func:`init_matrices` (``init_scale`` in :data:`INIT_SCALE_RANGE`).
    rtol, atol, max_nfev
        Passed to :func:`numerics.dynamics.training.gradient_flow` (``max_nfev``
        also bounds its steps; loss events on :math:`\log L`).

    Returns
    -------
    dict
        ``records``: one per target, highest first, each with ``target_loss``,
        ``reached``, ``steps`` (flow time in SGD steps of rate ``lr_ov``),
        ``loss`` (at the crossing), the three shares of :func:`attention_shares` and
        the entropy and plausibility of the expected-count attention
        (:func:`numerics.experiments.proxies.expected_count_proxies`) (None where not
        reached; a target not reached has ``stopped_by``, :data:`STOPPED_BY`, ``"budget"`` where the
        flow spent ``max_nfev``, ``"solver"`` where the solver failed, ``"overflow"``, and none where the
        flow levelled off above it); ``initial_loss``,
        ``status``, ``message``, ``nfev`` and ``seconds`` of the flow.

    Raises
    ------
    ValueError
        Bad argument (before any work; ``seed`` not an integer >= 0), or a target not below
        the initial loss.
    """
    from ..dynamics.training import gradient_flow

    t0 = time.perf_counter()
    ratio, lr_ov = check_ratio(ratio), check_lr_ov(lr_ov)
    init_scale = check_init_scale(init_scale)
    model = task_model(st, parameterization, ratio, lr_ov=1.0, seq_len=seq_len)
    p0 = init_matrices(st, model, init, init_scale, seed)
    L0 = model.loss(p0)
    targets = check_target_losses(target_losses, L0)
    # a flow that overflows stops there: its targets are reported not reached, without warnings
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        res = gradient_flow(model, p0, t_span=(0.0, np.inf), target_loss=targets[-1],
                            loss_thresholds=targets[:-1], rtol=rtol, atol=atol, log_events=True,
                            max_steps=max_nfev, max_nfev=max_nfev)
    records = []
    for target, hit in zip(targets, [*res.crossings, res.target_state]):
        if hit is None:
            records.append(_unreached(target, res.reason))
            continue
        p = hit["params"]
        records.append({"target_loss": target, "reached": True, "steps": hit["t"] / lr_ov,
                        "loss": model.loss(p), **attention_shares(model, p),
                        **proxies.expected_count_proxies(model.attention(p), model.instance,
                                                         query_attended=st.query_in_context)})
    return {"records": records, "initial_loss": L0, "status": res.status, "message": res.message,
            "nfev": res.nfev, "seconds": time.perf_counter() - t0}
