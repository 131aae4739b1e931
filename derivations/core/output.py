"""Write a command-line program's output without ending in a traceback.

``| head`` closes the pipe early (BrokenPipeError: the reader has what it
wanted, exit 0); ``> /dev/full`` cannot be written (one line on stderr, exit
1). Afterwards stdout points at /dev/null, so the interpreter's final flush
cannot print a traceback either.

>>> from derivations.core.output import emit
>>> emit("hello", "demo")
hello
0
"""
import os
import sys

__all__ = ["emit"]


def _silence_stdout():
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor
        pass


def emit(text: str, prog: str) -> int:
    """Print ``text`` (plus a newline) to stdout; returns the exit status:
    0, or 1 when the output could not be written (reported by ``prog`` on stderr).

    Parameters
    ----------
    text : str
        The output, without its final newline.
    prog : str
        The program's name, which prefixes the error line on stderr.

    Returns
    -------
    int
        0 when written (or the reader closed the pipe), 1 when stdout could not be written.
    """
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as exc:
        _silence_stdout()
        print(f"{prog}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
