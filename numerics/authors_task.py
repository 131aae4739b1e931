r"""The authors' Figure-2 task in its expected-count limit, and the theory's sweep prediction.

Task (as in the authors' public notebooks; :mod:`numerics.experiments.data`): a vocabulary of
:math:`V = 50` one-hot tokens (unscaled), 4 classes; class :math:`k`'s context
tokens are i.i.d. with weights 1 on the common ids 0-9 and
:math:`0.1, 0.2, \dots, 1.0` on its relevant ids :math:`10(k+1) .. 10(k+1)+9`
(sum 15.5); the query :math:`q_k = 5 + k` and the label :math:`y_k = 1 + k` lie
in the common range; the query attends over the ``seq_len - 2`` context tokens
*and itself*; scores are scaled by :math:`1/\sqrt{50}`; the output is 50-way.

In the **expected-count limit** a class-:math:`k` sequence is replaced by its
expected count vector

.. math:: c_k = (\mathrm{seq\_len} - 2)\,p_k + e_{q_k},

and the population loss is the class average of the cross-entropies of these
four "mean sequences" (:class:`numerics.task_model.TaskModel` with the softmax
taken with multiplicities).  The prediction is the gradient flow of that loss
on the full :math:`50\times 50` matrices, :math:`\dot W = -\eta_W\nabla_W L`
with :math:`\eta_{OV} = \mathrm{lr}_{OV}`, :math:`\eta_{QK} = r\,\mathrm{lr}_{OV}`
(both factors of a circuit share its rate), so flow time is measured in SGD
steps.  From the initialization (default :math:`10^{-6} I` for every matrix,
as in the authors' faster-QK runs) it is integrated with
:func:`scipy.integrate.solve_ivp` (DOP853) until the loss first reaches the
target (a terminal event on :math:`\log L - \log L^*`), where the relevant
attention -- attention summed over the relevant types (ids > 9), averaged over
classes -- is read off.

What the limit leaves out: the sampling noise of SGD and the difference between
the softmax of the expected counts and the expected softmax of sampled counts
(a Jensen gap of relative size :math:`\sim 1/\sqrt{\mathrm{seq\_len}}` per type).

>>> from numerics.authors_task import predicted_attention_at_loss
>>> a = predicted_attention_at_loss("CACO", [1.0], 1.0)
>>> a.shape, bool(0 < a[0] < 1)
((1,), True)
"""
from __future__ import annotations

import argparse
import json
import math
import numbers
import sys
import time

import numpy as np

from derivations.vocabulary import check_positive

from .task_model import PARAMETERIZATIONS, TaskInstance, TaskModel, task_gradient_flow

__all__ = ["VOCAB", "N_CLASSES", "QUERY_IDS", "LABEL_IDS", "token_probabilities",
           "authors_instance", "authors_model", "authors_init", "flow_to_loss",
           "predicted_attention_at_loss", "sweep_prediction"]

VOCAB = 50
N_CLASSES = 4
QUERY_IDS = (5, 6, 7, 8)
LABEL_IDS = (1, 2, 3, 4)
N_COMMON = 10
_INITS = ("identity", "uniform", "authors")


def token_probabilities() -> np.ndarray:
    r"""Context-token distribution of each class, shape ``(4, 50)`` (rows sum to 1)."""
    w = np.zeros((N_CLASSES, VOCAB))
    w[:, :N_COMMON] = 1.0
    for k in range(N_CLASSES):
        w[k, 10 * (k + 1):10 * (k + 1) + 10] = np.arange(1, 11) / 10.0
    return w / w.sum(axis=1, keepdims=True)


def authors_instance(seq_len=64, counts=None, query=None, label=None) -> TaskInstance:
    r"""The task as a :class:`~numerics.task_model.TaskInstance`.

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
        counts = (seq_len - 2) * token_probabilities()
        counts[np.arange(N_CLASSES), QUERY_IDS] += 1.0
    counts = np.asarray(counts, dtype=float)
    K = counts.shape[0] if counts.ndim == 2 else -1
    if query is None or label is None:
        if K != N_CLASSES:
            raise ValueError(f"query and label are required unless counts has {N_CLASSES} rows "
                             f"(one per class); counts has shape {counts.shape}")
    query = np.asarray(QUERY_IDS if query is None else query)
    label = np.asarray(LABEL_IDS if label is None else label)
    return TaskInstance(np.eye(VOCAB), counts, query, label, VOCAB,
                        np.arange(VOCAB) >= N_COMMON, score_scale=1.0 / math.sqrt(VOCAB),
                        h_QK=VOCAB, h_OV=VOCAB, name="authors")


def authors_model(parameterization, ratio, *, lr_ov=0.01, seq_len=64, counts=None, query=None,
                  label=None) -> TaskModel:
    """:class:`TaskModel` of the task with ``eta_OV = lr_ov`` and ``eta_QK = ratio * lr_ov``."""
    ratio, lr_ov = check_positive("ratio", ratio), check_positive("lr_ov", lr_ov)
    inst = authors_instance(seq_len, counts, query, label)
    return TaskModel(inst, parameterization, eta_QK=ratio * lr_ov, eta_OV=lr_ov)


def authors_init(model, init="identity", scale=1e-6, seed=1234) -> dict:
    r"""Initial parameters: ``"identity"`` (``scale`` times I, every matrix; the
    authors' faster-QK runs), ``"uniform"`` (i.i.d. uniform on
    :math:`\pm 1/\sqrt{50}`, PyTorch's default for a 50x50 layer; ``seed``) or
    ``"authors"`` (the notebooks' row-1 choice per parameterization: CACO
    uniform, FAFO uniform QK factors and ``scale * I`` OV factors, FACO/CAFO
    ``scale * I``)."""
    if init not in _INITS:
        raise ValueError(f"init must be one of {_INITS}, got {init!r}")
    scale = check_positive("init_scale", scale)
    if init == "identity":
        return model.init_params("identity", scale)
    rng = np.random.default_rng(seed)
    bound = 1.0 / math.sqrt(VOCAB)
    uniform = {k: rng.uniform(-bound, bound, size=s) for k, s in model.shapes.items()}
    if init == "uniform":
        return uniform
    # the notebooks' row-1 initializations: CACO uniform; FAFO uniform W_Q, W_K and
    # scale * I for W_O, W_V; FACO and CAFO scale * I everywhere
    ident = model.init_params("identity", scale)
    P = model.parameterization
    if P == "CACO":
        return uniform
    if P == "FAFO":
        return {k: (uniform[k] if k in ("W_Q", "W_K") else ident[k]) for k in model.keys}
    return ident


def flow_to_loss(parameterization, ratio, target_loss, *, lr_ov=0.01, seq_len=64,
                 init="identity", init_scale=1e-6, seed=1234, rtol=1e-8, atol=1e-13,
                 max_nfev=500_000) -> dict:
    r"""Gradient flow of the expected-count task until the loss first reaches ``target_loss``.

    Returns
    -------
    dict
        ``relevant_attention`` (class mean of the attention on ids > 9),
        ``query_attention`` (class mean of the attention on the query's own id,
        which is also in the context), ``loss``, ``steps`` (flow time in SGD
        steps of rate ``lr_ov``), ``nfev``, ``seconds``.

    Raises
    ------
    ValueError
        Bad argument, or ``target_loss`` not below the initial loss.
    RuntimeError
        The flow failed or did not reach the target within ``max_nfev``
        gradient evaluations.
    """
    t0 = time.perf_counter()
    model = authors_model(parameterization, ratio, lr_ov=lr_ov, seq_len=seq_len)
    target_loss = check_positive("target_loss", target_loss)
    p0 = authors_init(model, init, init_scale, seed)
    L0 = model.loss(p0)
    if not target_loss < L0:
        raise ValueError(f"target_loss must be below the initial loss {L0:.6g}, got {target_loss!r}")
    res = task_gradient_flow(model, p0, target_loss=target_loss, rtol=rtol, atol=atol,
                             keep_states=False, max_nfev=max_nfev)
    if res.status != 1:
        raise RuntimeError(f"{parameterization} ratio {ratio}: the flow did not reach loss "
                           f"{target_loss}: {res.message}")
    y = res.crossings[target_loss]["y"]
    p = model.unflatten(y)
    a = model.attention(p)
    q = model.instance.query
    return {"parameterization": parameterization, "ratio": float(ratio),
            "relevant_attention": model.alpha(p),
            "query_attention": float(a[np.arange(a.shape[0]), q] @ model.instance.weights),
            "loss": model.loss(p), "steps": res.crossings[target_loss]["t"],
            "nfev": res.nfev, "seconds": time.perf_counter() - t0}


def predicted_attention_at_loss(parameterization, ratios, target_loss, *, lr_ov=0.01, seq_len=64,
                                init="identity", init_scale=1e-6, seed=1234) -> np.ndarray:
    r"""Relevant-token attention when the expected-count gradient flow first reaches ``target_loss``.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    ratios : array_like of float
        Learning-rate ratios :math:`\eta_{QK}/\eta_{OV}` (> 0).
    target_loss : float
        Loss level (> 0, below the initial loss :math:`\approx\log 50`).
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
    if ratios.ndim != 1 or ratios.size == 0 or not np.all(np.isfinite(ratios) & (ratios > 0)):
        raise ValueError(f"ratios must be a non-empty list of finite numbers > 0, got {ratios!r}")
    return np.array([flow_to_loss(parameterization, float(r), target_loss, lr_ov=lr_ov,
                                  seq_len=seq_len, init=init, init_scale=init_scale,
                                  seed=seed)["relevant_attention"] for r in ratios])


def sweep_prediction(parameterizations, ratios, target_loss, **kwargs) -> dict:
    """``{parameterization: (ratios, predicted attention)}``, the ``prediction`` argument
    of the sweep figure (``numerics.experiments`` ``plot_sweep``)."""
    ratios = np.atleast_1d(np.asarray(ratios, dtype=float))
    return {P: (ratios.copy(), predicted_attention_at_loss(P, ratios, target_loss, **kwargs))
            for P in parameterizations}


# --------------------------------------------------------------------------- #
# command line: the prediction table
# --------------------------------------------------------------------------- #
class _ArgError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _ArgError(message)


def _floats(text, name):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise _ArgError(f"{name}: expected comma-separated numbers, got {text!r}") from None
    if not vals or not all(math.isfinite(v) and v > 0 for v in vals):
        raise _ArgError(f"{name}: numbers must be finite and > 0, got {text!r}")
    return vals


def build_parser():
    """The argparse parser of ``python -m numerics.authors_task`` (rendered in the docs)."""
    p = _Parser(prog="python -m numerics.authors_task",
                description="Predicted relevant attention at matched loss (expected-count "
                            "gradient flow of the authors' Figure-2 task).")
    p.add_argument("--parameterizations", default=",".join(PARAMETERIZATIONS), metavar="P[,P...]",
                   help="comma-separated subset of " + ",".join(PARAMETERIZATIONS) + " (default: all)")
    p.add_argument("--ratios", default="1,2,5,10,20", metavar="R[,R...]",
                   help="learning-rate ratios eta_QK / eta_OV (> 0; default 1,2,5,10,20)")
    p.add_argument("--target-loss", default="0.1", metavar="L",
                   help="loss at which attention is read off (0 < L < log 50; default 0.1)")
    p.add_argument("--seq-len", type=int, default=64, metavar="N",
                   help="sequence length (integer >= 3; default 64)")
    p.add_argument("--lr-ov", default="0.01", metavar="Y", help="OV learning rate (> 0; default 0.01)")
    p.add_argument("--init", choices=_INITS, default="identity",
                   help="weight initialization, scaled by --init-scale (default identity)")
    p.add_argument("--init-scale", default="1e-6", metavar="S",
                   help="scale of the initialization (> 0; default 1e-6)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return p


def main(argv=None) -> int:
    """``python -m numerics.authors_task [--parameterizations ..] [--ratios ..] [--target-loss L]
    [--seq-len N] [--init identity|uniform] [--init-scale S] [--json]``: the prediction table."""
    p = build_parser()
    try:
        a = p.parse_args(argv)
        Ps = a.parameterizations.split(",")
        bad = [x for x in Ps if x not in PARAMETERIZATIONS]
        if bad:
            raise _ArgError(f"--parameterizations: unknown {bad[0]!r}; choose from "
                            f"{','.join(PARAMETERIZATIONS)}")
        ratios = _floats(a.ratios, "--ratios")
        (target,) = _floats(a.target_loss, "--target-loss")
        if not target < math.log(VOCAB):
            raise _ArgError(f"--target-loss must be below log 50 = {math.log(VOCAB):.4f}")
        (lr_ov,) = _floats(a.lr_ov, "--lr-ov")
        (scale,) = _floats(a.init_scale, "--init-scale")
        if a.seq_len < 3:
            raise _ArgError(f"--seq-len must be an integer >= 3, got {a.seq_len}")
    except _ArgError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    rows = []
    for P in Ps:
        for r in ratios:
            rows.append(flow_to_loss(P, r, target, lr_ov=lr_ov, seq_len=a.seq_len, init=a.init,
                                     init_scale=scale))
    if a.json:
        print(json.dumps({"target_loss": target, "seq_len": a.seq_len, "init": a.init,
                          "init_scale": scale, "lr_ov": lr_ov, "rows": rows}, indent=1))
        return 0
    print(f"relevant attention at loss {target} (expected-count flow, seq_len {a.seq_len}, "
          f"init {a.init} {scale:g})")
    print("param   " + "".join(f"{'r=' + format(r, 'g'):>9}" for r in ratios))
    for P in Ps:
        vals = [row["relevant_attention"] for row in rows if row["parameterization"] == P]
        print(f"{P:8}" + "".join(f"{v:9.4f}" for v in vals))
    print("\nparam   ratio  rel.att  query.att       steps   nfev  seconds")
    for row in rows:
        print(f"{row['parameterization']:8}{row['ratio']:5g}  {row['relevant_attention']:.4f}"
              f"   {row['query_attention']:.4f}  {row['steps']:10.0f} {row['nfev']:6d}  "
              f"{row['seconds']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
