r"""The theory's prediction beside the sweep: one record per (parameterization, ratio, seed, target).

:func:`predict` runs one expected-count gradient flow
(:func:`numerics.experiments.theory.flow_to_losses`) per (parameterization,
ratio, seed), from exactly that SGD seed's initial matrices, and reads it off
where the loss first reaches each target loss: the flow time in SGD steps and
where the attention goes (relevant tokens, the query's own token, all other
positions). Seeds are numbered as the sweep's: 1234, 1235, ... When an
initialization draws nothing at random (``identity``; ``authors`` for FACO and
CAFO) every seed starts from the same matrices, and one flow answers them all.

Command line (``python -m numerics.experiments predict`` or, standalone,
``python -m numerics.experiments.predict``; ``python -m numerics.authors_task``
forwards here)::

    --parameterizations P,...  --ratios R,...  --target-loss L,...  --seeds K
    --init {authors,identity,uniform}  [--init-scale S]  [--seq-len N]  [--lr-ov X]  [--json]
    [--task NAME [--params name=value,...]]

prints a table, or with ``--json`` one object ``{"settings": ..., "records": [...]}``.
``--task`` sets an engine task's sampled version (:mod:`numerics.experiments.task_sampling`)
beside the SGD runs of the same task; its records also carry the engine's own state at each
target from zero initialization (:data:`TASK_RECORD_FIELDS`).
Bad input (an unknown parameterization, a ratio outside
:data:`~numerics.experiments.theory.RATIO_RANGE`, a duplicate target, a target
not below a seed's initial loss, ``--lr-ov 1,2``, ``--init-scale`` where no
matrix is a multiple of the identity, ...) prints one line on stderr and exits
with status 2 before any flow is run.

>>> recs = predict(["CACO"], [1.0], [1.0, 2.0], seeds=2)
>>> [(r["seed"], r["target_loss"], r["reached"]) for r in recs]
[(1234, 2.0, True), (1234, 1.0, True), (1235, 2.0, True), (1235, 1.0, True)]
>>> r = recs[-1]
>>> round(r["relevant_attention"] + r["self_attention"] + r["other_attention"], 12)
1.0
"""
from __future__ import annotations

import argparse
import json
import numbers
import sys

from derivations.core import authors_setting as _setting
from derivations.core.cli import (OneLineParser, UsageError, parse_int, parse_list, parse_number,
                                  progress_bar, usage_error)
from derivations.core.output import emit
from derivations.core.vocabulary import PARAMETERIZATIONS, check_parameterization

from . import models, task_sampling, theory
from .sweep import FIRST_SEED

__all__ = ["RECORD_FIELDS", "TASK_RECORD_FIELDS", "predict", "check_settings", "add_arguments", "build_parser",
           "settings_from_args", "command", "format_table", "main"]

#: Fields of a record of :func:`predict`, in order.
RECORD_FIELDS = ("parameterization", "ratio", "seed", "target_loss", "reached", "steps", "loss",
                 "relevant_attention", "self_attention", "other_attention")
#: Further fields of a record for an engine task (not the authors'): the engine's state at the
#: target from zero initialization (:func:`numerics.experiments.theory.closed_form_attention`).
TASK_RECORD_FIELDS = ("closed_form_method", "closed_form_relevant_attention")


def _seed_list(seeds) -> list:
    if isinstance(seeds, bool):
        raise ValueError(f"seeds must be a number of seeds >= 1 or a list of seeds; got {seeds!r}")
    if isinstance(seeds, numbers.Integral):
        if seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1 (the number of seeds); got {seeds!r}")
        return list(range(FIRST_SEED, FIRST_SEED + int(seeds)))
    out = list(dict.fromkeys(seeds))
    if not out or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 0
                          for s in out):
        raise ValueError(f"seeds must be integers >= 0; got {seeds!r}")
    return [int(s) for s in out]


def _draws(parameterization, init) -> bool:
    """Whether the initialization draws random matrices (else every seed starts alike)."""
    return "uniform" in models.init_kinds(parameterization, init).values()


def check_settings(parameterizations, ratios, target_losses, seeds=1, init="authors",
                   seq_len=None, lr_ov=0.01, init_scale=None, *, task=None, task_params=()) -> dict:
    """Validate every argument of :func:`predict` before any flow: a dict of the
    cleaned settings (duplicates of parameterizations and ratios dropped, targets
    sorted high to low), or ``ValueError`` naming the parameter and its range.

    The targets must lie below the initial loss of every (parameterization, seed)
    (computed here: one forward pass each). ``init_scale`` (default
    :data:`numerics.experiments.models.IDENTITY_SCALE`) is refused when no
    requested matrix is a multiple of the identity (``init="uniform"``, or
    ``"authors"`` for CACO alone): it would have no effect. ``task``, ``task_params``: an
    engine task and its parameter values (default the authors' task); ``seq_len`` (default
    the task's own length, 64 for the authors') as in the SGD runs."""
    st = task_sampling.sampled_task(task, task_params)
    if seq_len is None:
        seq_len = st.own_seq_len
    params = list(dict.fromkeys(check_parameterization(p) for p in parameterizations))
    if not params:
        raise ValueError("parameterizations must not be empty")
    ratios = list(dict.fromkeys(theory.check_ratio(r) for r in ratios))
    if not ratios:
        raise ValueError("ratios must not be empty")
    if init not in models.INITS:
        raise ValueError(f"init must be one of {models.INITS}, got {init!r}")
    if init_scale is not None and not any("identity" in models.init_kinds(p, init).values()
                                          for p in params):
        raise ValueError(f"init_scale has no effect: no matrix of the {init!r} initialization of "
                         f"{','.join(params)} is a multiple of the identity")
    scale = theory.check_init_scale(models.IDENTITY_SCALE if init_scale is None else init_scale)
    seeds = _seed_list(seeds)
    lr_ov = theory.check_lr_ov(lr_ov)
    theory.task_model(st, params[0], 1.0, seq_len=seq_len)      # seq_len check
    targets = theory.check_target_losses(target_losses)
    initial = min(theory.initial_loss(st, p, init, s, seq_len=seq_len, init_scale=scale)
                  for p in params for s in (seeds if _draws(p, init) else seeds[:1]))
    theory.check_target_losses(targets, initial)
    out = {"parameterizations": params, "ratios": ratios, "target_losses": list(targets),
           "seeds": seeds, "init": init, "init_scale": scale, "seq_len": int(seq_len),
           "lr_ov": lr_ov, **task_sampling.task_settings(st)}
    return out


def predict(parameterizations, ratios, target_losses, seeds=1, init="authors",
            seq_len=None, lr_ov=0.01, *, init_scale=None, rtol=1e-8, atol=1e-13,
            max_nfev=500_000, progress=None, task=task_sampling.DEFAULT_TASK, task_params=()) -> list:
    r"""The theory's records: one per (parameterization, ratio, seed, target).

    Parameters
    ----------
    parameterizations : iterable of {"CACO", "CAFO", "FACO", "FAFO"}
    ratios : iterable of float
        :math:`\eta_{QK}/\eta_{OV}`, in :data:`~numerics.experiments.theory.RATIO_RANGE`.
    target_losses : iterable of float
        Distinct losses below every initial loss (any order; sorted high to low).
    seeds : int or iterable of int
        The number of seeds (numbered as the sweep's, 1234, 1235, ...) or the seeds.
    init : {"authors", "identity", "uniform"}
        The SGD experiments' initialization (:func:`numerics.experiments.models.init_params`).
    seq_len : int, optional
        Sequence length (>= 3): context, query and label; default the task's own (64 for
        the authors' task).
    lr_ov : float
        OV learning rate: converts flow time to SGD steps.
    task, task_params : str, dict, optional
        An engine task that can be sampled and its parameter values
        (:mod:`numerics.experiments.task_sampling`); default the authors' task.
    init_scale : float, optional
        Scale of the identity matrices (default ``1e-6``, the SGD models').
    rtol, atol, max_nfev
        Of each flow (:func:`numerics.experiments.theory.flow_to_losses`).
    progress : callable, optional
        Called with no argument after each flow.

    Returns
    -------
    list of dict
        Fields :data:`RECORD_FIELDS` (and :data:`TASK_RECORD_FIELDS` for an engine
        task: None where the engine has no state at a loss), in the order
        parameterization x ratio x seed x target; ``reached`` False (and None
        for the numbers) where a flow stopped at ``max_nfev`` before a target.
    """
    s = check_settings(parameterizations, ratios, target_losses, seeds, init, seq_len, lr_ov,
                       init_scale, task=task, task_params=task_params)
    st = task_sampling.sampled_task(task, task_params)
    records = []
    for P in s["parameterizations"]:
        for r in s["ratios"]:
            shared = None
            closed = None if not st.engine_state else theory.closed_form_attention(
                st, P, r, s["target_losses"], s["seq_len"])
            for seed in s["seeds"]:
                if shared is None or _draws(P, init):
                    shared = theory.flow_to_losses(
                        st, P, r, s["target_losses"], lr_ov=s["lr_ov"], seq_len=s["seq_len"], init=init,
                        init_scale=s["init_scale"], seed=seed, rtol=rtol, atol=atol, max_nfev=max_nfev)
                if progress is not None:
                    progress()
                for rec in shared["records"]:
                    row = {"parameterization": P, "ratio": r, "seed": seed, **rec}
                    if closed is not None:
                        row.update(closed_form_method=closed["method"], closed_form_relevant_attention=
                                   closed["relevant_attention"][rec["target_loss"]])
                    records.append({k: row[k] for k in RECORD_FIELDS + (TASK_RECORD_FIELDS if closed else ())})
    return records


# --------------------------------------------------------------------------- #
# command line
# --------------------------------------------------------------------------- #
_FLAGS = {"parameterization": "--parameterizations", "ratio": "--ratios", "target_loss": "--target-loss",
          "init_scale": "--init-scale", "lr_ov": "--lr-ov", "seq_len": "--seq-len", "seeds": "--seeds",
          "init": "--init", "task": "--task"}
#: Most seeds one command line asks for (each random-start seed is one flow of ~0.1-10 s).
MAX_SEEDS = 10_000
#: Longest sequence of the command line (the expected counts are real numbers; any length works).
MAX_SEQ_LEN = 10 ** 9


def add_arguments(parser) -> None:
    """Add the options of ``predict`` (with ``--json`` and ``--quiet``) to an argparse parser."""
    lo, hi = theory.RATIO_RANGE
    slo, shi = theory.INIT_SCALE_RANGE
    a = parser.add_argument
    a("--parameterizations", default=",".join(PARAMETERIZATIONS), metavar="P[,P...]",
      help="comma-separated subset of " + ",".join(PARAMETERIZATIONS) + " (default: all)")
    a("--ratios", default="1,2,5,10,20", metavar="R[,R...]",
      help=f"learning-rate ratios eta_QK / eta_OV, each in [{lo:g}, {hi:g}] (default 1,2,5,10,20)")
    a("--target-loss", default="0.1", metavar="L[,L...]",
      help=f"distinct losses at which the flow is read off, each in [{theory.TARGET_LOSS_MIN:g}, initial "
           "loss) (sorted high to low; one flow answers all; default 0.1)")
    a("--seeds", default="1", metavar="K",
      help=f"number of seeds, numbered as the sweep's: {FIRST_SEED}, {FIRST_SEED + 1}, ... (integer in "
           f"[1, {MAX_SEEDS}]; default 1); each starts from that SGD seed's initial matrices")
    a("--init", default="authors", choices=models.INITS,
      help="the SGD models' initialization: the notebooks' per parameterization, 1e-6 I everywhere, "
           "or uniform(+-1/sqrt(50)) everywhere (default authors, as the sweep's)")
    a("--init-scale", default=None, metavar="S",
      help=f"scale of the identity matrices of --init identity or authors, in [{slo:g}, {shi:g}] "
           "(default 1e-6, the SGD models'; refused where no matrix is a multiple of I, e.g. --init "
           "uniform)")
    a("--seq-len", default=None, metavar="N",
      help=f"sequence length: context, query and label (integer in [3, {MAX_SEQ_LEN}]; default "
           f"{_setting.SEQ_LEN} for the authors' task, the task's own length for another --task)")
    task_sampling.add_task_arguments(parser)
    a("--lr-ov", default="0.01", metavar="X",
      help="OV learning rate: converts flow time to SGD steps (default 0.01)")
    a("--json", action="store_true", help="print one JSON object on stdout")
    a("--quiet", action="store_true", help="no progress bar")


def build_parser(prog: str = "python -m numerics.experiments.predict") -> argparse.ArgumentParser:
    """The standalone parser (errors raise :class:`~derivations.core.cli.UsageError`)."""
    parser = OneLineParser(prog=prog, description=(
        "The theory beside the sweep: the expected-count gradient flow of the authors' task (or --task) from "
        "each SGD seed's initial matrices, read off where the loss first reaches each target (steps, loss, "
        "attention on relevant tokens / the query's own token / other positions)."))
    add_arguments(parser)
    return parser


def _flag_message(exc) -> str:
    text = str(exc)
    name = text.split(" ", 1)[0]
    return _FLAGS[name] + text[len(name):] if name in _FLAGS else text


def settings_from_args(args) -> dict:
    """Parse and validate the options (no flow yet): ``(settings, init_scale)``, the
    checked settings of :func:`predict` (:func:`check_settings`) and the ``--init-scale``
    given (None if none), or :class:`~derivations.core.cli.UsageError` (one line)."""
    def number(flag, text):
        return parse_number(flag, text, positive=True)

    params = parse_list("--parameterizations", args.parameterizations)
    ratios = parse_list("--ratios", args.ratios, lambda t: number("--ratios", t))
    targets = parse_list("--target-loss", args.target_loss, lambda t: number("--target-loss", t))
    seeds = parse_int("--seeds", args.seeds, 1, MAX_SEEDS)
    st = task_sampling.task_from_args(args)
    seq_len = task_sampling.seq_len_for(st, args.seq_len)
    parse_int("--seq-len", seq_len, 3, MAX_SEQ_LEN)
    lr_ov = number("--lr-ov", args.lr_ov)
    scale = None if args.init_scale is None else number("--init-scale", args.init_scale)
    try:
        settings = check_settings(params, ratios, targets, seeds, args.init, seq_len, lr_ov, scale,
                                  task=st.name, task_params=st.params)
    except ValueError as exc:
        raise UsageError(_flag_message(exc)) from None
    return settings, scale


def format_table(payload) -> str:
    """The human-readable table of a ``predict`` payload (one line per record)."""
    s = payload["settings"]
    task = "the authors' task" if "task" not in s else f"task {s['task']} {s['task_params']}"
    lines = [f"expected-count flow of {task} (init {s['init']}, identity scale "
             f"{s['init_scale']:g}, seq_len {s['seq_len']}, lr_ov {s['lr_ov']:g}): attention where the "
             "loss first reaches each target",
             "param   ratio   seed  target        steps      loss  relevant    self   other"
             + ("" if "task" not in s else "  engine, zero init (method)")]
    for r in payload["records"]:
        head = f"{r['parameterization']:6}{r['ratio']:7g}{r['seed']:7d}  {r['target_loss']:<7g}"
        if not r["reached"]:
            lines.append(head + "   not reached")
            continue
        closed = r.get("closed_form_relevant_attention")
        lines.append(head + f"{r['steps']:12.1f}{r['loss']:10.4g}{r['relevant_attention']:10.4f}"
                     f"{r['self_attention']:8.4f}{r['other_attention']:8.4f}"
                     + ("" if "closed_form_method" not in r else
                        f"  {'-' if closed is None else format(closed, '.4f')} ({r['closed_form_method']})"))
    return "\n".join(lines)


def command(args):
    """``(work, fmt)`` for the experiments' command line: validates every option
    (:class:`~derivations.core.cli.UsageError`, before any flow); ``work()``
    returns the payload ``{"settings", "records"}``, ``fmt(payload)`` the table."""
    s, init_scale = settings_from_args(args)

    def work():
        flows = len(s["parameterizations"]) * len(s["ratios"]) * len(s["seeds"])
        bar = progress_bar(flows, desc="predict", unit="flow", show=not args.quiet)
        try:
            records = predict(s["parameterizations"], s["ratios"], s["target_losses"], s["seeds"],
                              s["init"], s["seq_len"], s["lr_ov"], init_scale=init_scale,
                              progress=bar.update, task=s.get("task", task_sampling.DEFAULT_TASK),
                              task_params=s.get("task_params", ()))
        finally:
            bar.close()
        return {"settings": s, "records": records}
    return work, format_table


def main(argv=None, prog: str = "python -m numerics.experiments.predict") -> int:
    """Standalone entry: one line and exit 2 on bad input, else the table or ``--json``."""
    try:
        args = build_parser(prog).parse_args(argv)
        work, fmt = command(args)
    except UsageError as exc:
        return usage_error(prog, exc)
    payload = work()
    text = json.dumps(payload, indent=1, allow_nan=False) if args.json else fmt(payload)
    return emit(text, prog)


if __name__ == "__main__":
    sys.exit(main())
