"""What the derivations show: printed dynamics, the LaTeX document, generated code.

* :mod:`~derivations.output.dynamics`: the one renderer of
  ``python -m derivations.print_dynamics`` (every task, every format);
* :mod:`~derivations.output.tex` and :mod:`~derivations.output.latex`: the one
  LaTeX builder (``python -m derivations.latex``);
* :mod:`~derivations.output.numeric_codegen`: the generator of the SymPy-free
  ``numerics/_generated.py``, with the floating-point rewrites of
  :mod:`~derivations.output.float_rewrites`;
* :mod:`~derivations.output.attention_data`: the stored numbers of where attention goes (SGD runs
  and crossover ratios, package data written by the experiments' commands), read as data by the
  LaTeX section and the figures.

Nothing here imports :mod:`numerics`. The names below are loaded on first use,
so that importing one module of the package does not import the others.
"""
from ..core import lazy_exports

_HOMES = {
    ".dynamics": ("render", "parse_params", "task_list"),
    ".formats": ("OneLine",),
    ".tex": ("abbreviate", "equation_lines"),
    ".latex": ("document", "snippet", "write"),
    ".numeric_codegen": ("function_specs", "generate", "generator_key"),
    ".float_rewrites": ("stabilize", "as_log1p", "as_logaddexp", "cancel_fractions", "as_shares", "omega_identity",
                        "float_form"),
    ".attention_data": ("sgd_runs", "crossover_rows"),
}

__all__ = [name for names in _HOMES.values() for name in names]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
