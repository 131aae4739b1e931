"""What every command line of the package shares, written once.

Plain Python (no SymPy, no NumPy at import), so that the derivation commands and the numeric ones
(``numerics.verify``, ``numerics.figures``, ``numerics.experiments``) report bad input the same way: **one
line on stderr, exit status 2, before any work and without partial output**.

===============================  ==============================================
name                             what
===============================  ==============================================
:class:`UsageError`              bad command-line input (one line, exit 2)
:class:`OneLineParser`           ``argparse`` parser raising :class:`UsageError`
:func:`usage_error`              print ``prog: error: message``, return 2
:func:`parse_params`             ``--params`` text -> dict (duplicates refused)
:func:`parse_list`               a non-empty comma-separated list (optionally distinct)
:func:`parse_float`              a number (any float, inf and nan included)
:func:`parse_number`             a finite number (optionally > 0)
:func:`parse_int`                an integer in a range
:func:`parse_loss`               a loss in ``(0, log M)``
:func:`rate_values`              learning rates from ``--ratio``/``--eta-*``
:func:`option_named`             a message about a value, naming the option that gave it
===============================  ==============================================

The parsers raise ``error`` (default :class:`UsageError`) for bad input, naming the option.
The output writer (``| head``, ``> /dev/full``), the progress bar and the check of an output
directory (``prepare_output_dir``) are in :mod:`derivations.core.output`, Ctrl-C and SIGTERM (one
line, exit status 130 or 143) in :mod:`derivations.core.interrupt`.

>>> from derivations.core.cli import parse_loss, parse_params
>>> parse_loss("0.5", 20)
0.5
>>> parse_loss("3", 20)
Traceback (most recent call last):
...
derivations.core.cli.UsageError: --loss must be in (0, log M) = (0, 2.99573); got '3'
>>> parse_params("m=5, n=50")
{'m': '5', 'n': '50'}
>>> parse_params("n_c=1,n_c=2")
Traceback (most recent call last):
...
derivations.core.cli.UsageError: --params names n_c twice
"""
from __future__ import annotations

import argparse
import math
import re
import sys

from .output import emit, note
from .version import VersionAction
from .vocabulary import check_positive, is_number_text

__all__ = ["UsageError", "OneLineParser", "usage_error", "parse_params",
           "parse_list", "parse_float", "parse_number", "parse_int", "parse_loss", "rate_values", "option_named"]


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit status 2."""


#: A value that starts with ``-`` but is a number or a list of numbers (``-1``, ``-1,10``, ``-.5``, ``-inf``).
_NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


class _StoreOnce(argparse._StoreAction):
    """``argparse``'s ``store`` action, refusing an option given twice: plain ``argparse`` keeps the
    last value and drops the first without a word (``--params m=5 --params n=3`` ran with the
    default ``m``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(parser, "_given", None)
        if given is not None and option_string is not None:
            if self.dest in given:
                parser.error(f"{option_string} is given twice ({given[self.dest]!r} and {values!r}): give it once")
            given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors raise :class:`UsageError` (one line,
    no usage block) for the command's ``main`` to report with :func:`usage_error`, which names
    the program. An option that takes a value takes one that starts with a minus sign and a number
    (``--ratio-range -1,10``, as ``--ratio-range=-1,10``), for its own check to refuse with its range;
    plain ``argparse`` reads ``-1,10`` as an option and says only that the value is missing.
    An option that takes a value is refused when given twice (``argparse`` would keep the last one).
    A parser has ``--version`` (the running package's version: :mod:`derivations.core.version`), its
    subcommands' parsers not.
    ``name`` (default ``prog``) starts the one line of a failed write of its help or version, its
    subcommands' included.

    >>> p = OneLineParser(prog="demo")
    >>> _ = p.add_argument("--ratios")
    >>> p.parse_args(["--ratios", "-1,10"]).ratios
    '-1,10'
    >>> p.parse_args(["--ratios", "1", "--ratios=2"])
    Traceback (most recent call last):
    ...
    derivations.core.cli.UsageError: --ratios is given twice ('1' and '2'): give it once

    Parameters
    ----------
    *args, **kwargs
        Those of :class:`argparse.ArgumentParser`.
    version : bool, optional
        Whether the parser has ``--version`` (default True; False for a subcommand's parser).
    name : str, optional
        The name that starts the line of a failed write of its help or version (default ``prog``).
    """

    def __init__(self, *args, version: bool = True, name: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.name = self.prog if name is None else name
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)
        if version:
            self.add_argument("--version", action=VersionAction, help="print the version of qkov and exit")

    def add_subparsers(self, **kwargs):
        """:meth:`argparse.ArgumentParser.add_subparsers`; a subcommand's parser has no ``--version`` of its own.

        Parameters
        ----------
        **kwargs
            Those of :meth:`argparse.ArgumentParser.add_subparsers`.

        Returns
        -------
        argparse.Action
        """
        import functools

        kwargs["parser_class"] = functools.partial(kwargs.get("parser_class", type(self)), version=False,
                                                   name=self.name)
        return super().add_subparsers(**kwargs)

    def parse_known_args(self, args=None, namespace=None):
        """:meth:`argparse.ArgumentParser.parse_known_args`, with ``--option -1,10`` read as
        ``--option=-1,10`` where ``--option`` takes one value.

        Parameters
        ----------
        args : list of str, optional
            Default ``sys.argv[1:]``.
        namespace : argparse.Namespace, optional

        Returns
        -------
        tuple
            The namespace and the arguments left over.
        """
        args = sys.argv[1:] if args is None else list(args)
        joined, i = [], 0
        while i < len(args):
            action = self._option_string_actions.get(args[i])
            if (args[i] != "--" and action is not None and action.nargs is None and i + 1 < len(args)
                    and _NEGATIVE_VALUE.match(args[i + 1])):
                joined.append(f"{args[i]}={args[i + 1]}")
                i += 2
                continue
            if args[i] == "--":
                joined += args[i:]
                break
            joined.append(args[i])
            i += 1
        self._given = {}
        try:
            return super().parse_known_args(joined, namespace)
        finally:
            self._given = None

    def print_help(self, file=None):
        """Print the help; into a closed pipe it ends quietly, into a full disk with one line and
        exit status 1 (:func:`derivations.core.output.emit`).

        Parameters
        ----------
        file : file-like, optional
            Where to print (default stdout, through :func:`~derivations.core.output.emit`).
        """
        if file is not None:
            super().print_help(file)
        elif emit(self.format_help().rstrip("\n"), self.name):
            self.exit(1)

    def error(self, message):  # one line, no usage dump
        """Raise :class:`UsageError` with ``message``.

        Parameters
        ----------
        message : str

        Raises
        ------
        UsageError
            Always: ``message``, one line.
        """
        raise UsageError(message)


def usage_error(prog: str, message) -> int:
    """Print ``prog: error: message`` as one line on stderr; return exit status 2.

    Parameters
    ----------
    prog : str
    message : str or Exception
        The reason; whitespace runs (newlines too) become one space, a word over 200 characters is cut.

    Returns
    -------
    int
    """
    text = " ".join(w if len(w) <= 200 else f"{w[:80]}...({len(w)} characters)" for w in str(message).split())
    note(f"{prog}: error: {text or 'invalid input'}")
    return 2


def _items(name: str, text, error) -> list:
    """The stripped comma-separated items of ``text`` (none for blank text); an empty
    item (``"0.5,,"``, ``",m=5"``) raises ``error`` naming ``name``."""
    text = str(text)
    if not text.strip():
        return []
    items = [part.strip() for part in text.split(",")]
    if not all(items):
        raise error(f"{name} must not have an empty item between commas; got {text!r}")
    return items


def parse_params(text: str, error=UsageError) -> dict:
    """``--params`` text as an ordered ``{name: value text}``; a name given twice
    raises ``error`` (the last one silently winning would hide a typo), and so does blank
    text: as ``--ratios ''``, an empty ``--params`` is refused, not read as the defaults, which
    omitting it gives.

    Parameters
    ----------
    text : str
        Comma-separated ``name=value`` items (``"m=5, n=50"``), spaces around them ignored.
    error : type, optional
        The exception raised (default :class:`UsageError`).

    Returns
    -------
    dict of str to str

    Raises
    ------
    UsageError
        (or ``error``) Blank text, an entry that is not ``name=value``, or a name given twice.
    """
    if not str(text).strip():
        raise error(f"--params must be name=value pairs, comma-separated (omit it for the defaults); got {text!r}")
    out = {}
    for item in _items("--params", text, error):
        name, _, value = (x.strip() for x in item.partition("="))
        if not name or not _:
            raise error(f"--params entries look like name=value; got {item!r}")
        if name in out:
            raise error(f"--params names {name} twice")
        out[name] = value
    return out


def parse_list(name: str, text, convert=str, error=UsageError, *, distinct: bool = False) -> list:
    """A non-empty comma-separated list, each item through ``convert``; an empty list
    (``--ratios ''``) or an empty item (``--target-loss 0.5,,``) raises ``error`` instead of
    meaning the default, and with ``distinct`` so does an item given twice (equal once converted:
    ``--ratios 1,1.0``), rather than being run twice or silently dropped.

    Parameters
    ----------
    name, text : str
        The option (for the message) and its comma-separated items.
    convert : callable, optional
        Applied to each stripped item (default ``str``); its values must be hashable with ``distinct``.
    error : type, optional
    distinct : bool, optional
        Refuse a repeated item (default False).

    Returns
    -------
    list

    Raises
    ------
    UsageError
        (or ``error``) An empty list or an empty item, an item ``convert`` refuses, or (``distinct``)
        an item given twice.

    Examples
    --------
    >>> parse_list("--ratios", "1, 4", float)
    [1.0, 4.0]
    >>> parse_list("--ratios", "1, 4, 1.0", float, distinct=True)
    Traceback (most recent call last):
    ...
    derivations.core.cli.UsageError: --ratios names 1.0 twice
    """
    items = _items(name, text, error)
    if not items:
        raise error(f"{name} must be a non-empty comma-separated list; got {text!r}")
    values = [convert(t) for t in items]
    if distinct:
        seen = set()
        for item, value in zip(items, values):
            if value in seen:
                raise error(f"{name} names {item} twice")
            seen.add(value)
    return values


def parse_float(name: str, text, error=UsageError) -> float:
    """``float(text)`` (inf and nan included) of text written plainly (ASCII digits:
    :func:`~derivations.core.vocabulary.is_number_text`), else ``error`` naming ``name`` and showing ``text``;
    a number too small for a double (``1e-400``, which ``float`` rounds to 0) is refused too.

    Parameters
    ----------
    name, text : str
        The option (for the message) and its value.
    error : type, optional

    Returns
    -------
    float

    Raises
    ------
    UsageError
        (or ``error``) Text that is not a number written plainly, or a number other than 0 that rounds to 0.

    >>> parse_float("m", "1e-400")
    Traceback (most recent call last):
    ...
    derivations.core.cli.UsageError: m must be 0 or at least about 5e-324 in magnitude ...; got '1e-400'
    """
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise error(f"{name} must be a number; got {text!r}") from None
    if not is_number_text(str(text)):
        raise error(f"{name} must be a number in ASCII digits (as 5, 0.5, 1e-3); got {text!r}")
    if value == 0 and re.search(r"[1-9]", str(text).lower().partition("e")[0]):
        raise error(f"{name} must be 0 or at least about 5e-324 in magnitude (the smallest double); got {text!r}")
    return value


def parse_number(name: str, text, *, positive: bool = False, error=UsageError) -> float:
    """``text`` as a finite float (``> 0`` with ``positive``), else ``error``.

    Parameters
    ----------
    name, text : str
        The option (for the message) and its value.
    positive : bool, optional
        Require a value > 0 (default False).
    error : type, optional

    Returns
    -------
    float

    Raises
    ------
    UsageError
        (or ``error``) Text that is not a finite number (> 0 with ``positive``), naming ``name``.
    """
    value = parse_float(name, text, error)
    if not math.isfinite(value):
        raise error(f"{name} must be finite; got {text!r}")
    if positive and value <= 0:
        raise error(f"{name} must be > 0; got {text!r}")
    return value


def parse_int(name: str, text, minimum: int, maximum: int | None = None, error=UsageError) -> int:
    """``text`` as an integer in ``[minimum, maximum]``, else ``error`` naming the range.

    Parameters
    ----------
    name, text : str
        The option (for the message) and its value.
    minimum, maximum : int
        The allowed range; ``maximum`` None (the default) has no upper bound.
    error : type, optional

    Returns
    -------
    int

    Raises
    ------
    UsageError
        (or ``error``) Text that is not an integer in the range, naming ``name`` and the range.
    """
    span = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    try:
        value = int(str(text).strip())
    except ValueError:
        value = None
    if value is None or not is_number_text(str(text), integer=True):   # int() reads 1_0 and 5 in other scripts
        raise error(f"{name} must be an integer {span}{'' if value is None else ' in ASCII digits'}; got {text!r}")
    if value < minimum or (maximum is not None and value > maximum):
        raise error(f"{name} must be an integer {span}; got {text!r}")
    return value


def _positive_float(name, text):
    try:
        return check_positive(name, parse_float(name, text), normal=True)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def rate_values(args) -> dict:
    """Learning-rate substitutions from --ratio / --eta-qk / --eta-ov.

    Parameters
    ----------
    args : argparse.Namespace
        Its ``ratio``, ``eta_qk``, ``eta_ov`` (text or None); ``--ratio r`` is ``--eta-qk r --eta-ov 1``.

    Returns
    -------
    dict of str to float
        ``eta_QK``, ``eta_Q``, ``eta_K`` and/or ``eta_OV``, ``eta_O``, ``eta_V``; empty for none.

    Raises
    ------
    UsageError
        If ``--ratio`` comes with ``--eta-*``, or a rate is not a normal double > 0.
    """
    if args.ratio is not None and (args.eta_qk is not None or args.eta_ov is not None):
        raise UsageError("give either --ratio or --eta-qk/--eta-ov, not both")
    if args.ratio is not None:
        qk, ov = _positive_float("--ratio", args.ratio), 1.0
    elif args.eta_qk is not None or args.eta_ov is not None:
        qk = _positive_float("--eta-qk", args.eta_qk) if args.eta_qk is not None else None
        ov = _positive_float("--eta-ov", args.eta_ov) if args.eta_ov is not None else None
    else:
        return {}
    out = {}
    if qk is not None:
        out.update(eta_QK=qk, eta_Q=qk, eta_K=qk)
    if ov is not None:
        out.update(eta_OV=ov, eta_O=ov, eta_V=ov)
    return out


def option_named(text, options) -> str:
    """A message about a value whose first word is the value's name (``b must be ...``), naming the option that
    gave it: ``--params b must be ...``, ``--ratio must be ...`` (the option ``--`` + the name), else
    ``--eta-qk, --eta-ov: ratio must be ...``; as it is for a name not in ``options``.

    Parameters
    ----------
    text : str or Exception
    options : dict
        ``{name: option}``; the option ``"--params"`` gives ``--params <name>``.

    Returns
    -------
    str
    """
    text = str(text)
    name, _, rest = text.partition(" ")
    option = options.get(name)
    if option is None:
        return text
    if option == "--params":
        return f"--params {text}"
    return f"{option} {rest}" if option == f"--{name}" else f"{option}: {text}"


def parse_loss(text: str, M_value, error=UsageError) -> float:
    """The ``--loss`` value ``text`` as a float in (0, log M); raises ``error`` otherwise.

    Parameters
    ----------
    text : str
    M_value : float
        The number of output classes :math:`M`.
    error : type, optional

    Returns
    -------
    float

    Raises
    ------
    UsageError
        (or ``error``) Text that is not a number in (0, log M).
    """
    loss_value = parse_float("--loss", text, error)
    if not (math.isfinite(loss_value) and 0 < loss_value < math.log(M_value)):
        raise error(f"--loss must be in (0, log M) = (0, {math.log(M_value):.6g}); got {text!r}")
    return loss_value


