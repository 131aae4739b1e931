r"""The authors' Figure-2 task in its expected-count limit: the theory beside the SGD runs.

Task (:mod:`derivations.core.authors_setting`, the one definition shared with
the engine's ``authors`` task and the sampler :mod:`numerics.experiments.data`):
a vocabulary of :math:`V = 50` one-hot tokens (unscaled), 4 classes; class
:math:`k`'s context tokens are i.i.d. with weights 1 on the common ids 0-9 and
:math:`0.1, 0.2, \dots, 1.0` on its relevant ids :math:`10(k+1) .. 10(k+1)+9`
(sum 15.5); the query :math:`q_k = 5 + k` and the label :math:`y_k = 1 + k`
lie in the common range; the query attends over the ``seq_len - 2`` context
tokens *and itself*; scores are scaled by :math:`1/\sqrt{50}`; the output is
50-way.

In the **expected-count limit** a class-:math:`k` sequence is replaced by its
expected count vector

.. math:: c_k = (\mathrm{seq\_len} - 2)\,p_k + e_{q_k}

(:func:`numerics.experiments.data.expected_counts`), and the population loss is
the class average of the cross-entropies of these four "mean sequences"
(:class:`numerics.model.attention.TaskModel` with the softmax taken with
multiplicities).  The prediction is the gradient flow of that loss on the full
:math:`50\times 50` matrices, :math:`\dot W = -\eta_W\nabla_W L` with
:math:`\eta_{OV} = \mathrm{lr}_{OV}`, :math:`\eta_{QK} = r\,\mathrm{lr}_{OV}`
(both factors of a circuit share its rate), so flow time is measured in SGD
steps.  It is integrated at :math:`\mathrm{lr}_{OV} = 1` and its time divided
by :math:`\mathrm{lr}_{OV}` (the path does not depend on the rate), with
:func:`numerics.dynamics.training.gradient_flow` (DOP853), until the loss first
reaches the lowest target; every higher target is a non-terminal event of the
same flow, so one flow answers every target.

**Like with like.** A seed's flow starts from exactly the matrices the SGD
model of that seed starts from: :func:`authors_init` calls the SGD model's
builder :func:`numerics.experiments.models.init_params` with
``numpy.random.default_rng(seed)`` (what :func:`~numerics.experiments.sgd.train_fig2`
does) and converts them with :func:`theory_params`: the SGD model scores
query :math:`q` against token :math:`v` with :math:`A = W_Q^\top W_K`, the
expected-count model with :math:`W_{QK} = W_Q W_K^\top`, so the factors are
transposed (the output circuit :math:`W_O W_V` is the same in both).

**Where the attention goes** (:func:`attention_shares`, read off where the loss
reaches each target): the relevant tokens, the query's own token (its own
position and its copies among the common tokens of the context: the models have
no positions, so the copies are one mechanism) and all other positions; class
averages of :func:`numerics.experiments.measure.attention_shares`, summing to 1.

**Any engine task.** :func:`task_model` builds the same expected-count model for a sampled
engine task (:mod:`numerics.experiments.task_sampling`: counts
:math:`(L-2)\,p_k` plus the query where it is in context, the task's embeddings, score scale
and outputs; factorized circuits with :math:`d` hidden units, as the SGD model's), and every
function here takes ``task=`` (a
:class:`~numerics.experiments.task_sampling.SampledTask`; None: the authors' task);
:func:`authors_init` then builds the task's shapes with the same builder.
:func:`closed_form_attention` adds the engine's own answer (closed form or reduced flow) from
zero initialization, for CACO.

What the limit leaves out: the sampling noise of SGD and the difference between
the softmax of the expected counts and the expected softmax of sampled counts
(a Jensen gap of relative size :math:`\sim 1/\sqrt{\mathrm{seq\_len}}` per type).

Supported inputs (answered in bounded time; anything else raises a
``ValueError`` naming the range before any work): ratios in
:data:`RATIO_RANGE`, targets in ``[TARGET_LOSS_MIN, initial loss)``, identity
scales in :data:`INIT_SCALE_RANGE`, ``lr_ov`` in :data:`LR_OV_RANGE`.

>>> from numerics.experiments.theory import predicted_attention_at_loss
>>> a = predicted_attention_at_loss("CACO", [1.0], 1.0)
>>> a.shape, bool(0 < a[0] < 1)
((1,), True)
"""
from __future__ import annotations

import math
import numbers
import time

import numpy as np

from derivations.core import authors_setting as _setting
from derivations.core.vocabulary import check_positive

from ..dynamics.training import gradient_flow
from ..model import TaskInstance, TaskModel
from . import data, measure, models, proxies

__all__ = ["VOCAB", "N_CLASSES", "QUERY_IDS", "LABEL_IDS", "INITS", "RATIO_RANGE",
           "TARGET_LOSS_MIN", "INIT_SCALE_RANGE", "LR_OV_RANGE", "token_probabilities",
           "authors_instance", "authors_model", "task_model", "closed_form_attention",
           "theory_params", "authors_init", "initial_loss",
           "attention_shares", "check_ratio", "check_target_losses", "check_init_scale",
           "check_lr_ov", "flow_to_losses", "flow_to_loss", "predicted_attention_at_loss",
           "sweep_prediction"]

VOCAB = _setting.VOCAB
N_CLASSES = _setting.NUM_CLASSES
QUERY_IDS = _setting.QUERY_TOKENS
LABEL_IDS = _setting.LABEL_TOKENS
#: Initializations, as the SGD experiments' (:data:`numerics.experiments.models.INITS`).
INITS = models.INITS
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


def token_probabilities() -> np.ndarray:
    r"""Context-token distribution of each class, shape ``(4, 50)`` (rows sum to 1)."""
    return data.class_probabilities()


def authors_instance(seq_len=_setting.SEQ_LEN, counts=None, query=None, label=None) -> TaskInstance:
    r"""The task as a :class:`~numerics.model.instance.TaskInstance`.

    Parameters
    ----------
    seq_len : int
        Sequence length (>= 3): ``seq_len - 2`` context tokens, the query, the label.
    counts : array_like, shape (K, 50), optional
        Explicit count vectors of the attended positions (query included), one
        per sequence kind, e.g. sampled sequences for a cross-check with the
        SGD model; default the expected counts
        :math:`(\mathrm{seq\_len}-2)p_k + e_{q_k}` of the 4 classes.
    query, label : array_like of int, shape (K,), optional
        Query and label token ids of the rows of ``counts`` (default: those of
        the 4 classes; required when ``counts`` has another number of rows).
    """
    if counts is None:
        if isinstance(seq_len, bool) or not isinstance(seq_len, numbers.Integral) or seq_len < 3:
            raise ValueError(f"seq_len must be an integer >= 3, got {seq_len!r}")
        counts = data.expected_counts(int(seq_len))
    counts = np.asarray(counts, dtype=float)
    K = counts.shape[0] if counts.ndim == 2 else -1
    if (query is None or label is None) and K != N_CLASSES:
        raise ValueError(f"query and label are required unless counts has {N_CLASSES} rows "
                         f"(one per class); counts has shape {counts.shape}")
    query = np.asarray(QUERY_IDS if query is None else query)
    label = np.asarray(LABEL_IDS if label is None else label)
    num, den = _setting.SCORE_SCALE_SQUARED
    return TaskInstance(np.eye(VOCAB), counts, query, label, VOCAB, data.RELEVANT,
                        score_scale=1.0 / math.sqrt(den / num), h_QK=VOCAB, h_OV=VOCAB,
                        name="authors")


def authors_model(parameterization, ratio, *, lr_ov=0.01, seq_len=_setting.SEQ_LEN, counts=None,
                  query=None, label=None) -> TaskModel:
    """:class:`TaskModel` of the task with ``eta_OV = lr_ov`` and ``eta_QK = ratio * lr_ov``."""
    ratio, lr_ov = check_positive("ratio", ratio), check_positive("lr_ov", lr_ov)
    inst = authors_instance(seq_len, counts, query, label)
    return TaskModel(inst, parameterization, eta_QK=ratio * lr_ov, eta_OV=lr_ov)


def theory_params(sgd_params: dict) -> dict:
    r"""The SGD model's matrices (:mod:`numerics.experiments.models`) in the
    expected-count model's convention (copies): ``W_Q``, ``W_K`` transposed
    (:math:`W_Q^\top W_K` there is :math:`W_{QK} = W_Q W_K^\top` here), every
    other matrix as it is."""
    return {k: np.array(v.T if k in ("W_Q", "W_K") else v, dtype=float)
            for k, v in sgd_params.items()}


def authors_init(model, init="identity", scale=models.IDENTITY_SCALE, seed=1234) -> dict:
    r"""The initial matrices of SGD seed ``seed`` in ``model``'s convention.

    Built by the SGD model's own builder,
    ``models.init_params(P, init, numpy.random.default_rng(seed), identity_scale=scale)``
    (``"identity"``: ``scale`` times I, every matrix; ``"uniform"``: i.i.d.
    uniform on :math:`\pm 1/\sqrt{50}`, PyTorch's default for a 50x50 layer;
    ``"authors"``: the notebooks' row-1 choice per parameterization: CACO
    uniform, FAFO uniform QK factors and ``scale * I`` OV factors, FACO/CAFO
    ``scale * I``), converted by :func:`theory_params`."""
    scale = check_positive("init_scale", scale)
    sgd = models.init_params(model.parameterization, init, np.random.default_rng(seed),
                             identity_scale=scale, shapes=_sgd_shapes(model))
    return theory_params(sgd)


def _sgd_shapes(model):
    r"""The SGD model's matrix shapes of ``model`` (``W_Q``, ``W_K`` transposed), or None for
    the authors' :math:`V\times V` matrices (today's path of the builder)."""
    shapes = {k: (s[::-1] if k in ("W_Q", "W_K") else s) for k, s in model.shapes.items()}
    return None if all(s == (VOCAB, VOCAB) for s in shapes.values()) else shapes


def task_model(task, parameterization, ratio, *, lr_ov=0.01, seq_len=None) -> TaskModel:
    """:class:`TaskModel` of a sampled engine task's expected counts
    (:func:`numerics.experiments.task_sampling.theory_instance`; ``task`` a
    :class:`~numerics.experiments.task_sampling.SampledTask`, ``seq_len`` default the task's
    own length), or of the authors' task when ``task`` is None (:func:`authors_model`)."""
    if task is None:
        return authors_model(parameterization, ratio, lr_ov=lr_ov,
                             seq_len=_setting.SEQ_LEN if seq_len is None else seq_len)
    from . import task_sampling

    ratio, lr_ov = check_positive("ratio", ratio), check_positive("lr_ov", lr_ov)
    seq_len = task.own_seq_len if seq_len is None else seq_len
    if seq_len is None:
        raise ValueError(f"task {task.name!r} has no integer length of its own: give seq_len")
    return TaskModel(task_sampling.theory_instance(task, seq_len), parameterization,
                     eta_QK=ratio * lr_ov, eta_OV=lr_ov)


def closed_form_attention(task, parameterization, ratio, target_losses, seq_len) -> dict:
    r"""The engine's own answer for an engine task: the relevant-token attention where the
    CACO flow from zero initialization first reaches each loss
    (:func:`numerics.dynamics.state.state_at_loss`: the paper's closed form, or the one a task
    inherits through the engine's rate map, else the engine's reduced flow).

    It describes the flow of this module from the ``identity`` initialization
    (:math:`10^{-6} I`, zero to within that scale) at the task's own length, where the expected
    counts are the engine's instance. Returns ``{"method", "relevant_attention"}``
    (``{target: alpha}``), or ``{"method": None, "reason": ...}`` where there is no such answer
    (another parameterization, another length, a task the engine does not reduce)."""
    def none(reason):
        return {"method": None, "reason": reason, "relevant_attention": dict.fromkeys(target_losses)}

    if parameterization != "CACO":
        return none("the engine's state at a loss is for CACO from zero initialization")
    if seq_len != task.own_seq_len:
        return none(f"seq_len {seq_len} is not the task's own length {task.own_seq_len}")
    from ..dynamics.state import state_at_loss

    try:
        st = state_at_loss(np.asarray(target_losses, dtype=float), float(ratio), task=task.name,
                           **dict(task.params))
    except (ValueError, RuntimeError) as exc:
        return none(str(exc))
    alpha = np.atleast_1d(np.asarray(st.alpha, dtype=float))
    return {"method": st.method, "relevant_attention": {t: float(a) for t, a in zip(target_losses, alpha)}}


def attention_shares(model, params) -> dict:
    """Class averages (weights of the instance) of the three attention shares of
    :func:`numerics.experiments.measure.attention_shares` in the expected-count model."""
    inst = model.instance
    shares = measure.attention_shares(model.attention(params), inst.query, inst.relevant)
    return {k: float(v @ inst.weights) for k, v in shares.items()}


def initial_loss(parameterization, init="authors", seed=1234, *, seq_len=_setting.SEQ_LEN,
                 init_scale=models.IDENTITY_SCALE, task=None) -> float:
    """The expected-count loss at seed ``seed``'s initial matrices (``task``: see :func:`task_model`)."""
    model = task_model(task, parameterization, 1.0, lr_ov=1.0, seq_len=seq_len)
    return model.loss(authors_init(model, init, init_scale, seed))


def _in_range(name, value, bounds, span=None):
    lo, hi = bounds
    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
          and math.isfinite(value) and lo <= value <= hi)
    if not ok:
        span = span or f"[{lo:g}, {hi:g}]"
        raise ValueError(f"{name} must be a number in {span} (the range the expected-count flow "
                         f"answers in bounded time); got {value!r}")
    return float(value)


def check_ratio(ratio) -> float:
    """``ratio`` as a float in :data:`RATIO_RANGE`, else ``ValueError`` naming the range."""
    return _in_range("ratio", ratio, RATIO_RANGE)


def check_init_scale(scale) -> float:
    """``scale`` as a float in :data:`INIT_SCALE_RANGE`, else ``ValueError``."""
    return _in_range("init_scale", scale, INIT_SCALE_RANGE)


def check_lr_ov(lr_ov) -> float:
    """``lr_ov`` as a float in :data:`LR_OV_RANGE`, else ``ValueError``."""
    return _in_range("lr_ov", lr_ov, LR_OV_RANGE)


def check_target_losses(targets, initial=None) -> tuple:
    """Targets sorted high to low (the order the flow reaches them); ``ValueError`` for
    an empty list, a duplicate, a target below :data:`TARGET_LOSS_MIN` or not below
    the initial loss ``initial`` (when given)."""
    values = list(np.atleast_1d(np.asarray(targets, dtype=object)).tolist())
    if not values:
        raise ValueError("target_loss must name at least one loss")
    span = f"[{TARGET_LOSS_MIN:g}, initial loss)"
    vals = [_in_range("target_loss", v, (TARGET_LOSS_MIN, math.inf), span) for v in values]
    dup = sorted({v for v in vals if vals.count(v) > 1})
    if dup:
        raise ValueError(f"target_loss names {dup[0]:g} twice")
    if initial is not None and max(vals) >= initial:
        raise ValueError(f"target_loss must be below the initial loss {initial:.6g}; "
                         f"got {max(vals):g}")
    return tuple(sorted(vals, reverse=True))


def _unreached(target):
    return {"target_loss": target, "reached": False, "steps": None, "loss": None,
            **dict.fromkeys(measure.SHARES), **dict.fromkeys(proxies.THEORY_PROXIES)}


def flow_to_losses(parameterization, ratio, target_losses, *, lr_ov=0.01, seq_len=_setting.SEQ_LEN,
                   init="authors", init_scale=models.IDENTITY_SCALE, seed=1234, rtol=1e-8,
                   atol=1e-13, max_nfev=500_000, task=None) -> dict:
    r"""One gradient flow of the expected-count task from seed ``seed``'s initial
    matrices, read off where the loss first reaches each target.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    ratio : float
        :math:`\eta_{QK}/\eta_{OV}` in :data:`RATIO_RANGE`.
    target_losses : float or sequence of float
        Distinct losses in ``[TARGET_LOSS_MIN, initial loss)`` (any order).
    lr_ov : float
        OV rate: converts flow time to SGD steps (:data:`LR_OV_RANGE`).
    seq_len : int
        Sequence length of the task (>= 3).
    init, init_scale, seed
        See :func:`authors_init` (``init_scale`` in :data:`INIT_SCALE_RANGE`).
    rtol, atol, max_nfev
        Passed to :func:`numerics.dynamics.training.gradient_flow` (``max_nfev``
        also bounds its steps; loss events on :math:`\log L`).
    task : SampledTask, optional
        An engine task's sampled version (:func:`task_model`); default the authors' task.

    Returns
    -------
    dict
        ``records``: one per target, highest first, each with ``target_loss``,
        ``reached``, ``steps`` (flow time in SGD steps of rate ``lr_ov``),
        ``loss`` (at the crossing), the three shares of :func:`attention_shares` and
        the entropy and plausibility of the expected-count attention
        (:func:`numerics.experiments.proxies.expected_count_proxies`) (None where not
        reached); ``initial_loss``,
        ``status``, ``message``, ``nfev`` and ``seconds`` of the flow.

    Raises
    ------
    ValueError
        Bad argument (before any work), or a target not below the initial loss.
    """
    t0 = time.perf_counter()
    ratio, lr_ov = check_ratio(ratio), check_lr_ov(lr_ov)
    init_scale = check_init_scale(init_scale)
    model = task_model(task, parameterization, ratio, lr_ov=1.0, seq_len=seq_len)
    p0 = authors_init(model, init, init_scale, seed)
    L0 = model.loss(p0)
    targets = check_target_losses(target_losses, L0)
    res = gradient_flow(model, p0, t_span=(0.0, np.inf), target_loss=targets[-1],
                        loss_thresholds=targets[:-1], rtol=rtol, atol=atol, log_events=True,
                        max_steps=max_nfev, max_nfev=max_nfev)
    records = []
    for target, hit in zip(targets, [*res.crossings, res.target_state]):
        if hit is None:
            records.append(_unreached(target))
            continue
        p = hit["params"]
        records.append({"target_loss": target, "reached": True, "steps": hit["t"] / lr_ov,
                        "loss": model.loss(p), **attention_shares(model, p),
                        **proxies.expected_count_proxies(model.attention(p), model.instance,
                                                         query_attended=task is None or task.query_in_context)})
    return {"records": records, "initial_loss": L0, "status": res.status, "message": res.message,
            "nfev": res.nfev, "seconds": time.perf_counter() - t0}


def flow_to_loss(parameterization, ratio, target_loss, *, lr_ov=0.01, seq_len=_setting.SEQ_LEN,
                 init="identity", init_scale=models.IDENTITY_SCALE, seed=1234, rtol=1e-8,
                 atol=1e-13, max_nfev=500_000) -> dict:
    r"""Gradient flow of the expected-count task until the loss first reaches ``target_loss``
    (:func:`flow_to_losses` with one target).

    Returns
    -------
    dict
        ``parameterization``, ``ratio``, ``relevant_attention``,
        ``self_attention``, ``other_attention`` (:func:`attention_shares`),
        ``query_attention`` (the former name of ``self_attention``), ``loss``,
        ``steps`` (flow time in SGD steps of rate ``lr_ov``), ``nfev``, ``seconds``.

    Raises
    ------
    ValueError
        Bad argument, or ``target_loss`` not below the initial loss.
    RuntimeError
        The flow failed or did not reach the target within ``max_nfev``
        gradient evaluations.
    """
    out = flow_to_losses(parameterization, ratio, [target_loss], lr_ov=lr_ov, seq_len=seq_len,
                         init=init, init_scale=init_scale, seed=seed, rtol=rtol, atol=atol,
                         max_nfev=max_nfev)
    rec = out["records"][0]
    if not rec["reached"]:
        raise RuntimeError(f"{parameterization} ratio {ratio}: the flow did not reach loss "
                           f"{target_loss}: {out['message']}")
    row = {"parameterization": parameterization, "ratio": float(ratio)}
    row.update({k: rec[k] for k in measure.SHARES})
    row.update(query_attention=rec["self_attention"], loss=rec["loss"], steps=rec["steps"],
               nfev=out["nfev"], seconds=out["seconds"])
    return row


def predicted_attention_at_loss(parameterization, ratios, target_loss, *, lr_ov=0.01,
                                seq_len=_setting.SEQ_LEN, init="identity",
                                init_scale=models.IDENTITY_SCALE, seed=1234) -> np.ndarray:
    r"""Relevant-token attention when the expected-count gradient flow first reaches ``target_loss``.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    ratios : array_like of float
        Learning-rate ratios :math:`\eta_{QK}/\eta_{OV}` (in :data:`RATIO_RANGE`).
    target_loss : float
        Loss level (below the initial loss :math:`\approx\log 50`).
    lr_ov : float
        OV rate; the flow's path does not depend on it (only its time in steps).
    seq_len : int
        Sequence length of the task (>= 3).
    init, init_scale, seed
        See :func:`authors_init`.

    Returns
    -------
    ndarray, shape ``(len(ratios),)``
        Attention summed over relevant positions, averaged over classes.
    """
    ratios = np.atleast_1d(np.asarray(ratios, dtype=float))
    lo, hi = RATIO_RANGE
    if ratios.ndim != 1 or ratios.size == 0 or not np.all((ratios >= lo) & (ratios <= hi)):
        raise ValueError(f"ratios must be a non-empty list of numbers in [{lo:g}, {hi:g}] (the range "
                         f"the expected-count flow answers in bounded time), got {ratios!r}")
    return np.array([flow_to_loss(parameterization, float(r), target_loss, lr_ov=lr_ov,
                                  seq_len=seq_len, init=init, init_scale=init_scale,
                                  seed=seed)["relevant_attention"] for r in ratios])


def sweep_prediction(parameterizations, ratios, target_loss, **kwargs) -> dict:
    """``{parameterization: (ratios, predicted attention)}``, the ``prediction`` argument
    of the sweep figure (``numerics.experiments`` ``plot_sweep``), for one seed
    (``seed``, default 1234); :func:`numerics.experiments.predict.predict` gives every
    seed's prediction and every share."""
    ratios = np.atleast_1d(np.asarray(ratios, dtype=float))
    return {P: (ratios.copy(), predicted_attention_at_loss(P, ratios, target_loss, **kwargs))
            for P in parameterizations}
