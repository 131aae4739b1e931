r"""Every derived result by name, computed once and cached on disk.

The derivations take several seconds in SymPy; programs that only *use* the
results (the ``print_dynamics`` CLI, the LaTeX writer, the generator of
``numerics/_generated.py``) load them from a JSON cache. Each result is a typed
:class:`Result` record (name, left side, expression, relation); the cache stores
their ``sympy.srepr`` text and reads it back *as data*
(:func:`derivations.srepr_reader.from_srepr`, no ``eval``).

Cache
-----
* The key is a SHA-256 over the source of every module that computes a result
  (:data:`SOURCE_MODULES`) and the SymPy version. Editing any of them changes
  the key and invalidates the cache.
* Look-up order: the cache shipped in the package
  (``derivations/_cache/derived.json``), then the user cache
  (``$XDG_CACHE_HOME/qkov/derived-<key>.json``, default ``~/.cache``). On a
  miss the results are derived, and written to the package file if writable,
  else to the user cache.
* A cache file that is not valid JSON, has the wrong shape, or holds anything
  but a whitelisted srepr tree is treated as damaged and rebuilt. Writes are
  atomic (temporary file + rename); when no location is writable, one line
  on stderr says so.
* Rebuild the shipped cache and the generated numeric module after changing a
  derivation: ``python -m derivations.catalog --rebuild`` (tests fail while
  either is stale; ``--check`` reports it).

>>> from derivations.catalog import results
>>> res = results()
>>> res["CACO.dmu_OV_dt_alpha"]
alpha*eta_OV/(b*(M + exp(alpha*mu_OV) - 1))
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NamedTuple

from .atomic_file import atomic_write_text
from .cli_output import emit
from .expression_cache import PACKAGE_DIR, save_first_writable, source_key, user_cache

SHIPPED_CACHE = PACKAGE_DIR / "_cache" / "derived.json"
SOURCE_MODULES = ("core/vocabulary", "symbolic/symbols", "symbolic/special_functions", "symbolic/forms",
                  "tasks/paper/model", "tasks/paper/reduction", "tasks/paper/factorization",
                  "tasks/paper/first_integral", "tasks/paper/sharpness", "tasks/paper/asymptotics",
                  "engine/first_integral", "engine/explicit", "catalog")


def cache_key() -> str:
    """SHA-256 of the deriving modules' source and the SymPy version."""
    return source_key(SOURCE_MODULES)


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


def derive_all() -> dict:
    """Run every derivation; returns ``{name: Result}`` (insertion-ordered)."""
    import sympy as sp

    from . import asymptotics, factorization, first_integral, reduction, sharpness
    from . import symbols as S
    from .model import family
    from .vocabulary import PARAMETERIZATIONS

    out = {}

    def add(name, expr, lhs=None, relation="="):
        out[name] = Result(name, lhs, expr, relation)

    def d(f, x=S.t):
        return sp.Derivative(f, x)

    add("model.alpha", reduction.alpha_expr(), S.alpha)
    add("model.loss", reduction.reduced_loss(), S.LOSS)
    add("model.loss_alpha", family("CACO").reduced_loss(), S.LOSS)
    for name in PARAMETERIZATIONS:
        d_ov, d_qk = reduction.reduced_odes(name)
        a_ov, a_qk = reduction.reduced_odes(name, in_alpha=True)
        add(f"{name}.dmu_OV_dt", d_ov, d(S.mu_OV))
        add(f"{name}.dmu_QK_dt", d_qk, d(S.mu_QK))
        add(f"{name}.dmu_OV_dt_alpha", a_ov, d(S.mu_OV))
        add(f"{name}.dmu_QK_dt_alpha", a_qk, d(S.mu_QK))
        if name != "CACO":
            u_ov, u_qk = reduction.reduced_odes(name, balanced=False, in_alpha=True)
            add(f"{name}.dmu_OV_dt_unbalanced_alpha", u_ov, d(S.mu_OV))
            add(f"{name}.dmu_QK_dt_unbalanced_alpha", u_qk, d(S.mu_QK))
        add(f"{name}.first_integral", first_integral.first_integral(name), S.H)
        add(f"{name}.dH_dt", first_integral.dH_dt(name), d(S.H))
        X, Y, slope = first_integral.line_coordinates(name)
        add(f"{name}.line_X", X, S.X)
        add(f"{name}.line_Y", Y, S.Y)
        add(f"{name}.line_slope", slope, d(S.Y, S.X))
        orbit = first_integral.orbit(name)
        add(f"{name}.orbit", orbit, None if isinstance(orbit, sp.Equality) else S.mu_QK)
    for circuit in ("QK", "OV"):
        C, dC = factorization.conserved_quantity(circuit)
        conserved = factorization.circuit_symbols(circuit).conserved
        eta = S.ETA_EFF[circuit]
        add(f"factorization.{circuit}.rate_factor", factorization.rate_factor(circuit), eta)
        add(f"factorization.{circuit}.conserved", C, conserved)
        add(f"factorization.{circuit}.conserved_dt", dC, d(conserved))
        add(f"factorization.{circuit}.effective_rate", factorization.effective_rate(circuit), eta)
        add(f"factorization.{circuit}.effective_rate_unbalanced",
            factorization.effective_rate(circuit, balanced=False), eta)
    dW, gA, gB = factorization.induced_flow()
    add("factorization.induced_flow", dW, d(S.W))
    add("CACO.alpha_on_orbit", first_integral.attention_on_orbit("CACO"), S.alpha)
    add("sharpness.margin", sharpness.margin_at_loss(), S.s)
    add("sharpness.state_equation", sharpness.state_equation(), sp.Function("F")(S.p, S.s, S.r))
    state_names = {"alpha": S.alpha, "mu_QK": S.mu_QK, "mu_OV": S.mu_OV}
    for key, value in sharpness.state_from_odds().items():
        add(f"sharpness.state.{key}", value, state_names[key])
    derivative_of = {"dF/dp": (S.F, S.p), "dF/dr": (S.F, S.r), "dp/dr": (S.p, S.r),
                     "dalpha/dr": (S.alpha, S.r), "dmu_QK/dr": (S.mu_QK, S.r),
                     "dmu_OV/dr": (S.mu_OV, S.r)}
    for key, (expr, sign) in sharpness.sharpness_signs().items():
        deriv = d(*derivative_of[key])
        add(f"sharpness.sign.{key}", expr, deriv)
        add(f"sharpness.sign_value.{key}", sp.Integer(sign), sp.sign(deriv))
    add("asymptotics.time_integrand", asymptotics.time_integrand("CACO"), d(S.t, S.mu_OV))
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
    return out


def _user_cache(key):
    return user_cache("derived", key)


def _decode(data, key):
    """``{name: Result}`` from parsed JSON, or None when the key differs (a
    stale cache). Raises ValueError when the data is damaged: wrong shape, or
    an entry that is not a whitelisted srepr tree (:mod:`derivations.srepr_reader`)."""
    from .srepr_reader import from_srepr
    if not isinstance(data, dict) or not isinstance(data.get("key"), str):
        raise ValueError("cache is not an object with a string 'key'")
    if data["key"] != key:
        return None
    entries = data.get("results")
    if not isinstance(entries, dict) or not entries:
        raise ValueError("cache has no 'results' object")
    out = {}
    for name, entry in entries.items():
        if not (isinstance(entry, dict) and set(entry) == {"lhs", "expr", "relation"}
                and entry["relation"] in RELATIONS and isinstance(entry["expr"], str)
                and (entry["lhs"] is None or isinstance(entry["lhs"], str))):
            raise ValueError(f"cache entry {name!r} has the wrong shape")
        lhs = None if entry["lhs"] is None else from_srepr(entry["lhs"])
        out[name] = Result(name, lhs, from_srepr(entry["expr"]), entry["relation"])
    return out


def _read(path, key):
    """The cached records at ``path`` under ``key``; None when missing, stale
    or damaged (a damaged file is then rebuilt by :func:`records`)."""
    try:
        data = json.loads(Path(path).read_text())
        return _decode(data, key)
    except (OSError, ValueError, RecursionError):
        return None


def write_cache(path: Path, key: str, records: dict) -> None:
    """Write ``records`` (``{name: Result}``) as srepr strings under ``key``,
    atomically: a temporary file in the same directory, then ``os.replace``.
    Sorted keys: byte-stable."""
    atomic_write_text(Path(path), _encode(key, records))


def _encode(key, records) -> str:
    """The cache file's text: ``records`` as checked srepr strings under ``key``."""
    from .srepr_reader import to_srepr
    payload = {"key": key, "results": {
        name: {"lhs": None if rec.lhs is None else to_srepr(rec.lhs), "expr": to_srepr(rec.expr),
               "relation": rec.relation} for name, rec in records.items()}}
    return json.dumps(payload, indent=1, sort_keys=True) + "\n"


_RECORDS = None
_WARNED = False


def records(*, rebuild: bool = False) -> dict:
    """All derived results as typed records ``{name: Result}``, from the cache
    when it is fresh; otherwise derived and saved (a warning on stderr, once,
    when no cache location is writable)."""
    global _RECORDS, _WARNED
    if _RECORDS is not None and not rebuild:
        return _RECORDS
    key = cache_key()
    data = None if rebuild else (_read(SHIPPED_CACHE, key) or _read(_user_cache(key), key))
    if data is None:
        data = derive_all()
        errors = save_first_writable((SHIPPED_CACHE, _user_cache(key)), _encode(key, data))
        if errors:
            if not _WARNED:
                _WARNED = True
                print("derivations.catalog: warning: cannot save the derivation cache ("
                      + "; ".join(errors) + "); results will be derived again next time",
                      file=sys.stderr)
    _RECORDS = data
    return data


def results(*, rebuild: bool = False) -> dict:
    """All derived results ``{name: expr}`` (the expressions of :func:`records`)."""
    return {name: rec.expr for name, rec in records(rebuild=rebuild).items()}


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser of ``python -m derivations.catalog``."""
    parser = argparse.ArgumentParser(
        prog="python -m derivations.catalog",
        description="List, check or rebuild the derived results: the shipped cache "
                    "(derivations/_cache/derived.json) and the numeric module generated from it "
                    "(numerics/_generated.py).")
    parser.add_argument("--rebuild", action="store_true",
                        help="derive everything, rewrite the shipped cache and regenerate numerics/_generated.py")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the shipped cache or the generated numeric module is stale")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    key = cache_key()
    if args.check:
        from .numeric_codegen import GENERATED_MODULE, generator_key
        fresh = _read(SHIPPED_CACHE, key) is not None
        try:
            generated = f'GENERATOR_KEY = "{generator_key(key)}"' in GENERATED_MODULE.read_text()
        except OSError:
            generated = False
        status = emit("shipped cache is " + ("fresh" if fresh else "STALE") + "; generated numeric module is "
                      + ("fresh" if generated else "STALE")
                      + ("" if fresh and generated else ": run python -m derivations.catalog --rebuild"),
                      "derivations.catalog")
        return status or (0 if fresh and generated else 1)
    if args.rebuild:
        global _RECORDS
        from . import numeric_codegen
        _RECORDS = derive_all()
        write_cache(SHIPPED_CACHE, key, _RECORDS)
        paths = numeric_codegen.write(key, {name: rec.expr for name, rec in _RECORDS.items()})
        return emit(f"wrote {SHIPPED_CACHE} (key {key[:12]}), " + ", ".join(str(p) for p in paths),
                    "derivations.catalog")
    return emit("\n".join(f"{name}: {expr}" for name, expr in results().items()), "derivations.catalog")


if __name__ == "__main__":
    sys.exit(main())
