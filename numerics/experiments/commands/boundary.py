r"""``python -m numerics.experiments boundary``: the crossover ratio of self and relevant attention.

For each (parameterization, target loss) one record with ``crossover_ratio`` (the ratio
eta_QK/eta_OV at which the attention on the query's own token equals the attention on the
relevant tokens at that loss), ``crossover_lambda`` and ``reason`` (why there is none).

* ``--init zero`` (the default, except for the authors' task): :func:`numerics.dynamics.boundary`,
  the master curve of a task of the ``query-copies`` shape. It holds for CACO from zero: the other
  parameterizations get a record with no ratio and the reason.
* ``--init authors|identity|uniform`` (the default for ``--task authors``, which has no master
  curve): :func:`numerics.experiments.flow_crossover.flow_boundary`, a search on the
  expected-count flow of each seed's start, as ``predict`` runs it, for any task that can be
  sampled and every parameterization; one record per (parameterization, seed, target loss), its
  ``crossover_lambda`` the coordinate :math:`\Lambda` at :math:`r^*` (no collapse behind it).

Bad input (``--seeds``, ``--init-scale`` or ``--seq-len`` with ``--init zero``, ``--init zero`` for a task not
of the shape, a ratio range outside the flow's, a master curve searched beyond
:data:`~numerics.dynamics.crossover.LAMBDA_MAX`,
a target named twice or not below a start's loss, ...) is one line and exit status 2, before any flow.
"""
from __future__ import annotations

import math
import sys

from derivations.core.cli import UsageError, parse_float, parse_int, parse_list, parse_number
from derivations.core.output import progress_bar
from derivations.core.vocabulary import PARAMETERIZATIONS

from ..stopping import target_losses
from .common import checked, number, parse_parameterizations
from .task_options import add_task_arguments, param_values, seq_len_for, set_by, task_from_args, task_message

__all__ = ["add_parser", "prepare"]

#: Why a parameterization other than CACO gets no crossover ratio.
NOT_CACO = ("no master curve: the crossover is derived for collapsed circuits (CACO), whose metric "
            "is constant; the factorized parameterizations' is not")


#: A parameter's name in the flow's messages -> the option that sets it.
_FLAGS = {"parameterization": "--parameterizations", "ratio": "--ratio-range", "ratios": "--ratio-range",
          "target_loss": "--target-loss", "init_scale": "--init-scale", "seeds": "--seeds", "init": "--init"}


def add_parser(sub):
    """Add the ``boundary`` subcommand and its options to the subparsers ``sub``.

    Parameters
    ----------
    sub : argparse.Action
        The subcommands of ``python -m numerics.experiments`` (what
        :meth:`argparse.ArgumentParser.add_subparsers` returned).
    """
    from numerics.dynamics.crossover import RATIO_RANGE

    from .. import models, task_sampling, theory
    from .predict import MAX_SEEDS, MAX_SEQ_LEN

    p = sub.add_parser("boundary", help="the crossover ratio of self and relevant attention (theory)",
                       description="The learning-rate ratio eta_QK/eta_OV above which the query attends more "
                                   "to its own token than to the relevant tokens when training stops at a "
                                   "target loss: from zero through the CACO master curve in Lambda = r (M-1) "
                                   "l(L)^2 / (M b) (a task of the query-copies shape), or on the "
                                   "expected-count flow of each seed's start (--init authors|identity|uniform, "
                                   "any task, the authors' among them); one record per (parameterization, "
                                   "[seed,] target loss), with the reason where there is no crossover.")
    a = p.add_argument
    add_task_arguments(p, "query-in-context", "a built-in task or a task file (.toml): of the query-copies "
                       f"shape for --init zero; {task_sampling.DEFAULT_TASK} is the authors' task (default "
                       "query-in-context)")
    a("--parameterizations", default="CACO", metavar="P[,P...]",
      help="comma-separated subset of " + ",".join(PARAMETERIZATIONS) + " (default CACO)")
    a("--target-loss", default="0.1", metavar="L[,L...]",
      help="stopping losses, each in (0, log M), below every start's loss (default 0.1)")
    a("--init", default=None, choices=("zero", *models.INITS),
      help="zero: the master curve (CACO from zero); authors, identity, uniform: the expected-count flow "
           "from each seed's start, as predict's (default zero; authors for the authors' task)")
    a("--init-scale", default=None, metavar="S",
      help="with --init identity or authors: the scale of the identity matrices (default 1e-6)")
    a("--seeds", default=None, metavar="K",
      help=f"with --init authors|identity|uniform: number of seeds, numbered as the sweep's (integer in "
           f"[1, {MAX_SEEDS}]; default 1)")
    a("--seq-len", default=None, metavar="N",
      help="with --init authors|identity|uniform: the sequence length, context, query and label (integer in "
           f"[3, {MAX_SEQ_LEN}]; default the task's own length, required for a task whose total multiplicity "
           "is not an integer)")
    a("--ratio-range", default=None, metavar="LO,HI",
      help=f"the ratios searched, 0 < LO < HI (default {RATIO_RANGE[0]:g},{RATIO_RANGE[1]:g} from zero, "
           f"{theory.RATIO_RANGE[0]:g},{theory.RATIO_RANGE[1]:g}, the flow's range, otherwise)")
    a("--json", action="store_true", help="print one JSON object on stdout")
    a("--quiet", action="store_true", help="no progress bar and no human-readable summary")


def _common(args, default_range):
    """``(parameterizations, targets, (lo, hi))`` as given (UsageError, one line)."""
    params = parse_parameterizations(args.parameterizations)
    targets = parse_list("--target-loss", args.target_loss, lambda t: parse_number("--target-loss", t))
    text = args.ratio_range or f"{default_range[0]:g},{default_range[1]:g}"
    ends = parse_list("--ratio-range", text, lambda t: parse_float("--ratio-range", t))
    if len(ends) != 2 or not sys.float_info.min <= ends[0] < ends[1] <= sys.float_info.max:  # no subnormal LO
        raise UsageError(f"--ratio-range must be LO,HI with 0 < LO < HI, both finite normal doubles (in "
                         f"[{sys.float_info.min!r}, {sys.float_info.max!r}]); got {text!r}")
    return params, targets, tuple(ends)


def _zero_settings(args) -> dict:
    """The master curve's settings (UsageError, one line), nothing computed."""
    from numerics.dynamics import master_shares, task_parameters, task_shape
    from numerics.dynamics.crossover import RATIO_RANGE
    for flag, value in (("--seeds", args.seeds), ("--init-scale", args.init_scale), ("--seq-len", args.seq_len)):
        if value is not None:
            raise UsageError(f"{flag}: only with --init authors, identity or uniform (the master curve "
                             "starts from zero)")
    values = param_values(args)
    try:
        task_parameters(args.task, **values)
    except ValueError as exc:
        raise UsageError(task_message(args.task, exc, values)) from None
    try:
        shape = task_shape(args.task, **values)
    except ValueError as exc:
        raise UsageError(f"{task_message(args.task, exc, values)}; --init authors, identity or uniform searches its "
                         "expected-count flow") from None
    try:                                # the master flow's range of numbers, checked before any flow
        master_shares([], **{k: shape[k] for k in ("s", "m", "n", "R")})
    except ValueError as exc:
        raise UsageError(task_message(args.task, exc, values)) from None
    params, targets, (lo, hi) = _common(args, RATIO_RANGE)
    top = math.log(shape["M"])
    for loss in targets:
        if not 0 < loss < top:
            from numerics.validation import shown_number
            raise UsageError(f"--target-loss must be in (0, log M = {shown_number(top)}); got {shown_number(loss)}")
    checked(target_losses, targets)
    _check_lambda_window(shape, targets, lo, hi, args.task, values)
    return {"task": args.task, "shape": shape, "parameterizations": params,
            "target_losses": targets, "init": "zero", "ratio_range": [lo, hi]}


def _check_lambda_window(shape, targets, lo, hi, task, given) -> None:
    """Refuse a ratio range whose Lambda leaves double precision or exceeds
    :data:`~numerics.dynamics.crossover.LAMBDA_MAX`: the rule of
    :func:`numerics.dynamics.crossover.boundary`, which refuses it inside the window and outside; the message
    names M and b and where they come from (``M = 20, b = 1e-300, set by --params b``: ``task``, what ``--task``
    named, and ``given``, the values of ``--params``), and the range of b that ``hi`` allows."""
    import numpy as np

    from numerics.dynamics.crossover import LAMBDA_MAX, lambda_of_ratio
    def values():
        from derivations.core.output import shown_float
        return set_by(task, f"M = {shape['M']:g}, b = {shown_float(shape['b'])}", given)
    try:
        lambda_of_ratio(lo, np.asarray(targets), shape["M"], shape["b"])
    except ValueError as exc:                            # Lambda beyond double precision at lo
        raise UsageError(f"--ratio-range from {lo:g}: {exc}; {values()}") from None
    try:
        top = float(np.max(lambda_of_ratio(hi, np.asarray(targets), shape["M"], shape["b"])))
    except ValueError:                                   # Lambda beyond double precision
        top = np.inf
    if not top <= LAMBDA_MAX:
        from numerics.validation import shown_number
        try:                                             # Lambda is 1/b times its value at b = 1
            b_least = float(np.max(lambda_of_ratio(hi / LAMBDA_MAX, targets, shape["M"], 1.0)))
            least = f" or b >= {shown_number(b_least)}"
        except ValueError:
            least = ""
        raise UsageError(f"--ratio-range up to {shown_number(hi)} gives Lambda = r (M-1) l(L)^2 / (M b) up to "
                         f"{shown_number(top)} at --target-loss {min(targets):g} ({values()}), beyond the "
                         f"{LAMBDA_MAX:g} the master curve is searched to; give a lower HI{least}")


def _flow_settings(args, init) -> dict:
    """The expected-count flow's settings (UsageError, one line): every check of
    :func:`~numerics.experiments.predict.check_settings` (targets below every start's loss)."""
    from .. import theory
    from ..predict import check_settings
    from .predict import MAX_SEEDS, MAX_SEQ_LEN
    st = task_from_args(args)
    params, targets, (lo, hi) = _common(args, theory.RATIO_RANGE)
    seeds = parse_int("--seeds", args.seeds or "1", 1, MAX_SEEDS)
    scale = None if args.init_scale is None else number("--init-scale", args.init_scale)
    seq_len = parse_int("--seq-len", seq_len_for(st, args), 3, MAX_SEQ_LEN)
    s = checked(check_settings, params, [lo, hi], targets, seeds, init, seq_len, 0.01, scale, task=args.task,
                task_params=st.params, flags=_FLAGS)
    return {"task": args.task, "task_params": [list(p) for p in st.params],
            "parameterizations": s["parameterizations"], "target_losses": s["target_losses"],
            "init": init, **{k: s[k] for k in ("init_scale",) if k in s}, "seeds": s["seeds"], "seq_len": s["seq_len"],
            "ratio_range": [lo, hi], "given_init_scale": scale}


def _settings(args) -> dict:
    """Every option checked (UsageError, one line), nothing computed."""
    from ..task_sampling import DEFAULT_TASK
    init = args.init or ("authors" if args.task == DEFAULT_TASK else "zero")
    return _zero_settings(args) if init == "zero" else _flow_settings(args, init)


def _zero_records(s) -> list:
    from numerics.dynamics import boundary
    records = []
    for P in s["parameterizations"]:
        if P != "CACO":
            records += [{"parameterization": P, "target_loss": L, "crossover_ratio": None,
                         "crossover_lambda": None, "reason": NOT_CACO} for L in s["target_losses"]]
            continue
        for rec in boundary(**s["shape"], target_loss=s["target_losses"], ratio_range=tuple(s["ratio_range"])):
            records.append({"parameterization": P, **rec})
    return records


def prepare(args):
    """Check every option (before any flow); return ``(work, format)``.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    tuple
        ``work()`` returns the payload ``{"settings", "records"}``; ``format`` is ``format_table``.

    Raises
    ------
    derivations.core.cli.UsageError
        Bad input (one line).
    """
    s = _settings(args)
    scale = s.pop("given_init_scale", None)       # the flow's own default where none was given

    def work():
        if s["init"] == "zero":
            return {"settings": s, "records": _zero_records(s)}
        from ..flow_crossover import flow_boundary
        with progress_bar(len(s["parameterizations"]) * len(s["seeds"]), desc="boundary", unit="search",
                          show=not args.quiet) as bar:
            records = flow_boundary(s["parameterizations"], s["target_losses"], s["seeds"], s["init"],
                                    init_scale=scale, ratio_range=tuple(s["ratio_range"]), task=s["task"],
                                    task_params=s["task_params"], seq_len=s["seq_len"], progress=bar.update)
        return {"settings": s, "records": records}
    return work, format_table


def format_table(payload) -> str:
    """One line per record (with its seed on the expected-count flow).

    Parameters
    ----------
    payload : dict
        ``{"settings", "records"}``.

    Returns
    -------
    str
    """
    seeds = any("seed" in r for r in payload["records"])
    lines = [f"{'P':5}{' seed' if seeds else ''} {'loss':>8} {'r*':>12} {'Lambda*':>12}  reason"]
    for r in payload["records"]:
        ratio = "-" if r["crossover_ratio"] is None else f"{r['crossover_ratio']:.6g}"
        lam = "-" if r["crossover_lambda"] is None else f"{r['crossover_lambda']:.6g}"
        seed = f" {r['seed']:4d}" if seeds else ""
        lines.append(f"{r['parameterization']:5}{seed} {r['target_loss']:8.4g} {ratio:>12} {lam:>12}  "
                     f"{r['reason'] or ''}")
    return "\n".join(lines)
