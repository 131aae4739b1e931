"""What a command needs beyond qkov's own requirements: an optional dependency (an extra of qkov) checked
before any work.

Plain Python at import, as the rest of :mod:`derivations.core`.

>>> require_optional("json", "plot", "--output")
>>> require_optional("no_such_module", "plot", "--output")
Traceback (most recent call last):
...
derivations.core.cli.UsageError: --output needs the optional dependency no_such_module, ... 'qkov[plot]'
"""
from .cli import UsageError

__all__ = ["require_optional"]


def require_optional(module: str, extra: str, what: str) -> None:
    """Refuse, before any work, what needs an optional dependency that is not installed, or that is but
    fails to load (its import raises: matplotlib refuses an ``MPLBACKEND`` it does not know).

    Parameters
    ----------
    module : str
        The module it needs (``"matplotlib"``).
    extra : str
        The extra of qkov that installs it (``"plot"``).
    what : str
        What needs it, for the message (``"--output (its figures)"``).

    Raises
    ------
    UsageError
        ``module`` is not installed (one line: what needs it and how to install it), or its import
        raises (one line: what needs it and the import's reason).
    """
    import importlib
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise UsageError(f"{what} needs the optional dependency {module}, not installed: "
                         f"pip install 'qkov[{extra}]'")
    from .interrupt import interrupts_deferred

    try:        # installed but refusing to load (matplotlib with MPLBACKEND=bogus): its reason, one line
        with interrupts_deferred():     # (an interrupt that stops an extension's initialization is an ImportError)
            importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - whatever a module raises while it loads
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise UsageError(f"{what} needs the optional dependency {module}, which cannot be loaded here: "
                         f"{reason}") from None
