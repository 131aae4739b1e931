"""What the derivation command lines share: the usage error, a parser that
raises it, the number and learning-rate options, the ``--loss`` check and the
rendering of an expression (``print_dynamics`` and its ``--task`` output,
:mod:`derivations.task_dynamics`).

>>> from derivations.cli import parse_loss
>>> parse_loss("0.5", 20)
0.5
>>> parse_loss("3", 20)
Traceback (most recent call last):
...
derivations.cli.UsageError: loss must be in (0, log M) = (0, 2.99573); got '3'
"""
from __future__ import annotations

import argparse
import math

from .vocabulary import check_positive

__all__ = ["UsageError", "OneLineParser", "assignments", "rate_values", "parse_loss"]


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors raise :class:`UsageError`
    (one line, no usage block) for the command's ``main`` to report."""

    def error(self, message):  # one line, no usage dump
        raise UsageError(message)


def assignments(text: str, error=UsageError):
    """The ``(name, value)`` text pairs of ``--params`` text ``"m=5, n=50"``, in
    order (empty items skipped); ``error`` for an item without ``=``."""
    for item in filter(None, (part.strip() for part in text.split(","))):
        if "=" not in item:
            raise error(f"--params entries look like name=value; got {item!r}")
        name, value = (x.strip() for x in item.split("=", 1))
        yield name, value


def _number(name, text):
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{name} must be a number; got {text!r}") from None


def _positive_float(name, text):
    try:
        return check_positive(name, _number(name, text))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def rate_values(args) -> dict:
    """Learning-rate substitutions from --ratio / --eta-qk / --eta-ov."""
    if args.ratio is not None and (args.eta_qk is not None or args.eta_ov is not None):
        raise UsageError("give either --ratio or --eta-qk/--eta-ov, not both")
    if args.ratio is not None:
        qk, ov = _positive_float("ratio", args.ratio), 1.0
    elif args.eta_qk is not None or args.eta_ov is not None:
        qk = _positive_float("eta-qk", args.eta_qk) if args.eta_qk is not None else None
        ov = _positive_float("eta-ov", args.eta_ov) if args.eta_ov is not None else None
    else:
        return {}
    out = {}
    if qk is not None:
        out.update(eta_QK=qk, eta_Q=qk, eta_K=qk)
    if ov is not None:
        out.update(eta_OV=ov, eta_O=ov, eta_V=ov)
    return out


def _render(expr, fmt):
    import sympy as sp
    if fmt == "pretty":
        return sp.pretty(expr, use_unicode=True, wrap_line=False)
    if fmt == "latex":
        return sp.latex(expr)
    return str(expr)


def parse_loss(text: str, M_value, error=UsageError) -> float:
    """The ``--loss`` value ``text`` as a float in (0, log M); raises ``error`` otherwise."""
    try:
        loss_value = float(text)
    except ValueError:
        raise error(f"loss must be a number; got {text!r}") from None
    if not (math.isfinite(loss_value) and 0 < loss_value < math.log(M_value)):
        raise error(f"loss must be in (0, log M) = (0, {math.log(M_value):.6g}); got {text!r}")
    return loss_value
