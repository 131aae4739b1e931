r"""Every derived result by name, computed once and cached on disk.

The derivations take several seconds in SymPy; programs that only *use* the
results (the ``print_dynamics`` CLI, the LaTeX writer, the generator of
``numerics/_generated.py``) load them from a JSON cache. Each result is a typed
:class:`Result` record (name, left side, expression, relation); the cache stores
their ``sympy.srepr`` text and reads it back *as data*
(:func:`derivations.symbolic.srepr_reader.from_srepr`, no ``eval``).

Cache
-----
The store :data:`STORE` of the one expression cache
(:class:`derivations.core.expression_cache.ExpressionStore`):

* The key is a SHA-256 over the source of every module of
  ``derivations/core``, ``symbolic``, ``engine``, ``tasks`` and of this
  module, the file format and the SymPy version
  (:func:`derivations.core.expression_cache.source_key`): no hand-kept list.
* Look-up order: the cache shipped in the package
  (``derivations/_cache/derived.json``), then the user cache
  (``$XDG_CACHE_HOME/qkov/derived-<key>.json``, default ``~/.cache``). On a
  miss the results are derived and written to the user cache only (the
  package's directory is never written by a program that uses it).
* A cache file that is not valid JSON, has the wrong shape, whose results do
  not match the digest kept with its key, or that holds anything but a
  bounded whitelisted srepr tree is treated as damaged and derived again.
  Writes are atomic (temporary file + rename); when the user cache is not
  writable, one line on stderr says so.
* Rebuild the shipped caches (with the printed-results cache of
  :data:`derivations.catalog.PRINTED`) and the generated numeric module after changing a
  derivation: ``python -m derivations.catalog --rebuild`` (tests fail while
  either is stale; ``--check`` reports it).

>>> from derivations.catalog import results
>>> res = results()
>>> res["CACO.dmu_OV_dt_alpha"]
alpha*eta_OV/(b*(M + exp(alpha*mu_OV) - 1))
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

from .core.cli import OneLineParser
from .core.interrupt import exit_on_interrupt
from .core.expression_cache import ExpressionStore

__all__ = ["Result", "RELATIONS", "STORE", "PRINTED", "derive_all", "records",
           "results", "build_parser", "main"]


class Result(NamedTuple):
    """One derived result.

    Attributes
    ----------
    name : str
        Catalog key, ``<group>.<what>`` (for example ``"CACO.dmu_OV_dt"``).
    lhs : sympy.Basic or None
        What the expression is (for example ``Derivative(mu_OV, t)``); None
        when the expression is itself an equation.
    expr : sympy.Basic
        The derived expression.
    relation : {"=", "~"}
        ``lhs = expr`` or ``lhs ~ expr`` (asymptotically equal).
    """
    name: str
    lhs: object
    expr: object
    relation: str = "="


RELATIONS = ("=", "~")


def _d(f, x=None):
    import sympy as sp

    from .symbolic import symbols as S
    return sp.Derivative(f, S.t if x is None else x)


def _reduced_system_results(add):
    """The model, and per parameterization the reduced ODEs, first integral, lines and orbit."""
    import sympy as sp

    from .core.vocabulary import PARAMETERIZATIONS
    from .symbolic import symbols as S
    from .tasks.paper import first_integral, reduction
    from .tasks.paper.model import family
    add("model.alpha", reduction.alpha_expr(), S.alpha)
    add("model.loss", reduction.reduced_loss(), S.LOSS)
    add("model.loss_alpha", family("CACO").reduced_loss(), S.LOSS)
    for name in PARAMETERIZATIONS:
        d_ov, d_qk = reduction.reduced_odes(name)
        a_ov, a_qk = reduction.reduced_odes(name, in_alpha=True)
        add(f"{name}.dmu_OV_dt", d_ov, _d(S.mu_OV))
        add(f"{name}.dmu_QK_dt", d_qk, _d(S.mu_QK))
        add(f"{name}.dmu_OV_dt_alpha", a_ov, _d(S.mu_OV))
        add(f"{name}.dmu_QK_dt_alpha", a_qk, _d(S.mu_QK))
        if name != "CACO":
            u_ov, u_qk = reduction.reduced_odes(name, balanced=False, in_alpha=True)
            add(f"{name}.dmu_OV_dt_unbalanced_alpha", u_ov, _d(S.mu_OV))
            add(f"{name}.dmu_QK_dt_unbalanced_alpha", u_qk, _d(S.mu_QK))
        add(f"{name}.first_integral", first_integral.first_integral(name), S.H)
        add(f"{name}.dH_dt", first_integral.dH_dt(name), _d(S.H))
        X, Y, slope = first_integral.line_coordinates(name)
        add(f"{name}.line_X", X, S.X)
        add(f"{name}.line_Y", Y, S.Y)
        add(f"{name}.line_slope", slope, _d(S.Y, S.X))
        orbit = first_integral.orbit(name)
        add(f"{name}.orbit", orbit, None if isinstance(orbit, sp.Equality) else S.mu_QK)


def _factorization_results(add):
    """Rate factors, conserved quantities and effective rates of both circuits; the induced flow."""
    from .symbolic import symbols as S
    from .tasks.paper import factorization, first_integral
    for circuit in ("QK", "OV"):
        C, dC = factorization.conserved_quantity(circuit)
        conserved = factorization.circuit_symbols(circuit).conserved
        eta = S.ETA_EFF[circuit]
        add(f"factorization.{circuit}.rate_factor", factorization.rate_factor(circuit), eta)
        add(f"factorization.{circuit}.conserved", C, conserved)
        add(f"factorization.{circuit}.conserved_dt", dC, _d(conserved))
        add(f"factorization.{circuit}.effective_rate", factorization.effective_rate(circuit), eta)
        add(f"factorization.{circuit}.effective_rate_unbalanced",
            factorization.effective_rate(circuit, balanced=False), eta)
    dW, gA, gB = factorization.induced_flow()
    add("factorization.induced_flow", dW, _d(S.W))
    add("CACO.alpha_on_orbit", first_integral.attention_on_orbit("CACO"), S.alpha)


def _sharpness_results(add):
    """The state at a loss and the signs of its rate-ratio derivatives."""
    import sympy as sp

    from .symbolic import symbols as S
    from .tasks.paper import sharpness
    add("sharpness.margin", sharpness.margin_at_loss(), S.s)
    add("sharpness.state_equation", sharpness.state_equation(), sp.Function("F")(S.p, S.s, S.r))
    state_names = {"alpha": S.alpha, "mu_QK": S.mu_QK, "mu_OV": S.mu_OV}
    for key, value in sharpness.state_from_odds().items():
        add(f"sharpness.state.{key}", value, state_names[key])
    derivative_of = {"dF/dp": (S.F, S.p), "dF/dr": (S.F, S.r), "dp/dr": (S.p, S.r),
                     "dalpha/dr": (S.alpha, S.r), "dmu_QK/dr": (S.mu_QK, S.r),
                     "dmu_OV/dr": (S.mu_OV, S.r)}
    for key, (expr, sign) in sharpness.sharpness_signs().items():
        deriv = _d(*derivative_of[key])
        add(f"sharpness.sign.{key}", expr, deriv)
        add(f"sharpness.sign_value.{key}", sp.Integer(sign), sp.sign(deriv))


def _asymptotics_results(add):
    """Time along the orbit, the early phase and the late-time limits."""
    import sympy as sp

    from .symbolic import symbols as S
    from .tasks.paper import asymptotics
    add("asymptotics.time_integrand", asymptotics.time_integrand("CACO"), _d(S.t, S.mu_OV))
    early_lhs = {"alpha_0": S.ALPHA_0, "t_of_mu_OV_alpha": S.t, "mu_OV_of_t_alpha": S.mu_OV,
                 "t_of_mu_OV": S.t, "mu_OV_of_t": S.mu_OV, "loss_of_t": S.LOSS}
    for key, value in asymptotics.early_phase().items():
        add(f"asymptotics.early.{key}", value, early_lhs[key])
    late = asymptotics.late_time()
    late_lhs = {
        "one_minus_alpha": (1 - S.alpha, "="),
        "one_minus_alpha_leading": (1 - S.alpha, "~"),
        "one_minus_alpha_ratio_limit": (sp.Limit((1 - S.alpha) / late["one_minus_alpha_leading"],
                                                 S.mu_OV, sp.oo), "="),
        "t_of_mu_late": (S.t, "="),
        "loss_times_t_limit": (sp.Limit(S.t * S.LOSS, S.t, sp.oo), "="),
        "loss_leading": (S.LOSS, "~")}
    for key, value in late.items():
        add(f"asymptotics.late.{key}", value, *late_lhs[key])


def result_names() -> list:
    """Every result's name, in the order :func:`derive_all` derives them: what a complete cache holds.

    Returns
    -------
    list of str
    """
    from .core.vocabulary import PARAMETERIZATIONS
    odes = [f"{v}_dt{a}" for a in ("", "_alpha") for v in ("dmu_OV", "dmu_QK")]
    lines = ["first_integral", "dH_dt", "line_X", "line_Y", "line_slope", "orbit"]
    names = ["model.alpha", "model.loss", "model.loss_alpha"]
    for p in PARAMETERIZATIONS:
        unbalanced = [] if p == "CACO" else ["dmu_OV_dt_unbalanced_alpha", "dmu_QK_dt_unbalanced_alpha"]
        names += [f"{p}.{x}" for x in odes + unbalanced + lines]
    for c in ("QK", "OV"):
        names += [f"factorization.{c}.{x}" for x in ("rate_factor", "conserved", "conserved_dt", "effective_rate",
                                                        "effective_rate_unbalanced")]
    names += ["factorization.induced_flow", "CACO.alpha_on_orbit", "sharpness.margin", "sharpness.state_equation"]
    names += [f"sharpness.state.{x}" for x in ("alpha", "mu_QK", "mu_OV")]
    signs = ("dF/dp", "dF/dr", "dp/dr", "dalpha/dr", "dmu_QK/dr", "dmu_OV/dr")
    names += [f"sharpness.{kind}.{x}" for x in signs for kind in ("sign", "sign_value")]
    names += ["asymptotics.time_integrand"]
    names += [f"asymptotics.early.{x}" for x in ("alpha_0", "t_of_mu_OV_alpha", "mu_OV_of_t_alpha", "t_of_mu_OV",
                                                 "mu_OV_of_t", "loss_of_t")]
    return names + [f"asymptotics.late.{x}" for x in ("one_minus_alpha", "one_minus_alpha_leading",
                                                      "one_minus_alpha_ratio_limit", "t_of_mu_late",
                                                      "loss_times_t_limit", "loss_leading")]


def derive_all() -> dict:
    """Run every derivation; returns ``{name: Result}`` (in the order of ``result_names()``).

    Raises
    ------
    ValueError
        If the names derived are not ``result_names()`` (a result added without its name there).
    """
    out = {}

    def add(name, expr, lhs=None, relation="="):
        out[name] = Result(name, lhs, expr, relation)

    for group in (_reduced_system_results, _factorization_results, _sharpness_results, _asymptotics_results):
        group(add)
    if list(out) != result_names():
        raise ValueError(f"derive_all derived {list(out)}; result_names() lists {result_names()}")
    return out


def _encode(records: dict) -> dict:
    """``{name: {"lhs", "expr", "relation"}}``: every expression as checked srepr text."""
    from .symbolic.srepr_reader import to_srepr
    return {name: {"lhs": None if rec.lhs is None else to_srepr(rec.lhs), "expr": to_srepr(rec.expr),
                   "relation": rec.relation} for name, rec in records.items()}


def _decode(entries: dict) -> dict:
    """``{name: Result}`` from the stored entries (of the shape :func:`_shape`). Raises ValueError
    when an entry is not a whitelisted srepr tree."""
    from .symbolic.srepr_reader import from_srepr
    return {name: Result(name, None if entry["lhs"] is None else from_srepr(entry["lhs"]), from_srepr(entry["expr"]),
                         entry["relation"]) for name, entry in entries.items()}


def _shape() -> dict:
    """The shape of the stored entries (:mod:`derivations.core.json_shape`): every result's name."""
    return dict.fromkeys(result_names(), {"lhs": (None, str), "expr": str, "relation": frozenset(RELATIONS)})


#: The paper's results in the one expression cache (``derivations/_cache/derived.json``).
STORE = ExpressionStore("derived", __file__, lambda: derive_all(), _encode, _decode,
                        prog="derivations.catalog", what="derivation cache", shape=_shape)


def records(*, rebuild: bool = False) -> dict:
    """All derived results as typed records, from the cache when it is fresh;
    otherwise derived and saved (a warning on stderr, once, when no cache
    location is writable).

    Parameters
    ----------
    rebuild : bool
        Derive again even when the cache is fresh.

    Returns
    -------
    dict
        ``{name: Result}``.
    """
    return STORE.load(rebuild=rebuild)


def results(*, rebuild: bool = False) -> dict:
    """All derived results as expressions (those of :func:`records`).

    Parameters
    ----------
    rebuild : bool
        Derive again even when the cache is fresh.

    Returns
    -------
    dict
        ``{name: sympy.Expr}``.
    """
    return {name: rec.expr for name, rec in records(rebuild=rebuild).items()}


def _print_results() -> dict:
    """``{format: {name: text}}``: every result of :func:`results` as ``print_dynamics``
    prints it without substitutions, in each of
    :data:`~derivations.output.formats.PRINTED_FORMATS`."""
    from .output.formats import PRINTED_FORMATS, format_expression
    res = results()
    return {fmt: {name: format_expression(expr, fmt) for name, expr in res.items()} for fmt in PRINTED_FORMATS}


def _printed_shape() -> dict:
    """The shape of the printed results (:mod:`derivations.core.json_shape`): ``{format: {name: text}}``
    for every printed format and result."""
    from .output.formats import PRINTED_FORMATS
    return dict.fromkeys(PRINTED_FORMATS, dict.fromkeys(result_names(), str))


#: The paper's results as printed, in the one expression cache
#: (``derivations/_cache/printed.json``), keyed on the derivations' sources, this
#: module and :mod:`derivations.output.formats`: ``print_dynamics`` without ``--params``
#: or rates prints them without decoding or printing an expression.
PRINTED = ExpressionStore("printed", __file__, _print_results, dict, dict, prog="print_dynamics",
                          what="printed-results cache", shape=_printed_shape,
                          sources=[Path(__file__).parent / "output" / "formats.py"])


def build_parser() -> OneLineParser:
    """The command-line parser of ``python -m derivations.catalog``."""
    parser = OneLineParser(
        prog="python -m derivations.catalog", name=STORE.prog,
        description="List, check or rebuild the derived results: the shipped cache "
                    "(derivations/_cache/derived.json) and the numeric module generated from it "
                    "(numerics/_generated.py).")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--rebuild", action="store_true",
                       help="derive everything, rewrite the shipped caches (derived.json, printed.json) "
                            "and regenerate numerics/_generated.py")
    modes.add_argument("--check", action="store_true",
                       help="exit 1 if a shipped cache or the generated numeric module is stale")
    return parser


def _generated_is_fresh(key) -> bool:
    from .output.numeric_codegen import GENERATED_MODULE, generator_key
    try:
        return f'GENERATOR_KEY = "{generator_key(key)}"' in GENERATED_MODULE.read_text()
    except OSError:
        return False


def _printed_is_fresh(key) -> bool:
    return PRINTED.read(PRINTED.shipped, PRINTED.key()) is not None


def _regenerate(key, recs) -> list:
    """Regenerate the numeric module and rebuild the printed-results cache from ``recs``."""
    from .output import numeric_codegen
    paths = numeric_codegen.write(key, {name: rec.expr for name, rec in recs.items()})
    PRINTED.rebuild()
    return [*paths, PRINTED.shipped]


@exit_on_interrupt("derivations.catalog")
def main(argv=None) -> int:
    """Entry point of ``python -m derivations.catalog``; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0, or 1 while ``--check`` finds a cache or the generated module stale (or the output
        cannot be written), 2 bad options (one line on stderr, nothing done), 130 Ctrl-C and
        143 SIGTERM (one line, no traceback).
    """
    return STORE.main(argv, build_parser(), shipped_label="shipped cache",
                      extra_checks=[("generated numeric module", _generated_is_fresh),
                                    ("printed-results cache", _printed_is_fresh)],
                      after_rebuild=_regenerate,
                      listing=lambda: "\n".join(f"{name}: {expr}" for name, expr in results().items()))


if __name__ == "__main__":
    sys.exit(main())
