"""Layer 0 of the package: what every other module needs and nothing symbolic.

Plain Python at import (no SymPy, no NumPy), so numeric hot paths, worker
processes and command lines import it without cost:

* :mod:`~derivations.core.vocabulary`: names (parameterizations, circuits,
  the paper's setting) and the input checks, each defined once;
* :mod:`~derivations.core.atomic_file`: every file the package writes is
  written atomically, every file it reads as data is read within a bound;
* :mod:`~derivations.core.cli`: one parser that reports one line and exit
  status 2, the ``--params`` and list parsers, the output-directory check;
* :mod:`~derivations.core.interrupt`: Ctrl-C or SIGTERM in a command is one line
  and exit status 130 or 143;
* :mod:`~derivations.core.output`: the output writer (``| head``, a full disk)
  and the progress bar;
* :mod:`~derivations.core.expression_cache`: where derived expressions are
  cached, under a key of their sources;
* :mod:`~derivations.core.json_shape`: the declared shape a cache file's entries are checked against;
* :mod:`~derivations.core.optional`: an optional dependency a command needs, checked before any work;
* :mod:`~derivations.core.time_bound`: a bound on the wall time of a computation
  whose cost the input decides;
* :mod:`~derivations.core.exports`: how a subpackage exports its API without
  importing every module at once (this package's too: the numeric closed form, which needs the
  vocabulary, loads no command-line module).
"""
from .interrupt import guard_loading

guard_loading()         # first: Ctrl-C while a command loads the modules below is one line

from .exports import lazy_exports

_HOMES = {
    ".atomic_file": ("atomic_write", "atomic_write_text", "read_bounded", "is_temporary", "temporary_name_length"),
    ".output": ("emit", "prepare_output_dir", "progress_bar", "isatty"),
    ".cli": ("OneLineParser", "UsageError", "usage_error", "parse_params", "parse_list", "parse_float",
             "parse_number", "parse_int", "parse_loss", "rate_values"),
    ".interrupt": ("exit_on_interrupt", "EXIT_INTERRUPTED", "EXIT_TERMINATED"),
    ".vocabulary": ("PARAMETERIZATIONS", "check_parameterization", "qk_factorized", "ov_factorized",
                    "PAPER_SETTING", "MODEL_PARAMETERS", "MAX_CLASSES", "check_model_parameters",
                    "check_positive", "check_classes", "Circuit", "CIRCUITS", "check_circuit", "RATE_NAMES",
                    "SHARES"),
    ".exports": ("lazy_exports",),
    ".time_bound": ("time_limit",),
    ".optional": ("require_optional",),
}

__all__ = [name for names in _HOMES.values() for name in names]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
