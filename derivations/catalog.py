r"""Every derived result by name, computed once and cached on disk.

The derivations take tens of seconds in SymPy; programs that only *use* the
results (the ``print_dynamics`` CLI, the LaTeX writer, ``numerics``) load them
from a JSON cache of ``sympy.srepr`` strings.

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
* Rebuild the shipped cache after changing a derivation:
  ``python -m derivations.catalog --rebuild`` (a test fails while it is stale).

>>> from derivations.catalog import results
>>> res = results()
>>> res["CACO.dmu_OV_dt_alpha"]
alpha*eta_OV/(b*(M + exp(alpha*mu_OV) - 1))
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SHIPPED_CACHE = PACKAGE_DIR / "_cache" / "derived.json"
SOURCE_MODULES = ("symbols", "special_functions", "model", "reduction", "factorization",
                  "first_integral", "sharpness", "asymptotics", "catalog")


def cache_key() -> str:
    """SHA-256 of the deriving modules' source and the SymPy version."""
    import importlib.metadata as md
    h = hashlib.sha256()
    for name in SOURCE_MODULES:
        h.update((PACKAGE_DIR / f"{name}.py").read_bytes())
    h.update(md.version("sympy").encode())
    return h.hexdigest()


def derive_all() -> dict:
    """Run every derivation; returns ``{name: sympy expression}`` (insertion-ordered)."""
    import sympy as sp

    from . import asymptotics, factorization, first_integral, reduction, sharpness
    from .model import PARAMETERIZATIONS, family

    out = {}
    out["model.alpha"] = reduction.alpha_expr()
    out["model.loss"] = reduction.reduced_loss()
    out["model.loss_alpha"] = family("CACO").reduced_loss()
    for name in PARAMETERIZATIONS:
        d_ov, d_qk = reduction.reduced_odes(name)
        a_ov, a_qk = reduction.reduced_odes(name, in_alpha=True)
        out.update({f"{name}.dmu_OV_dt": d_ov, f"{name}.dmu_QK_dt": d_qk,
                    f"{name}.dmu_OV_dt_alpha": a_ov, f"{name}.dmu_QK_dt_alpha": a_qk})
        if name != "CACO":
            u_ov, u_qk = reduction.reduced_odes(name, balanced=False, in_alpha=True)
            out.update({f"{name}.dmu_OV_dt_unbalanced_alpha": u_ov,
                        f"{name}.dmu_QK_dt_unbalanced_alpha": u_qk})
        out[f"{name}.first_integral"] = first_integral.first_integral(name)
        out[f"{name}.dH_dt"] = first_integral.dH_dt(name)
        X, Y, slope = first_integral.line_coordinates(name)
        out.update({f"{name}.line_X": X, f"{name}.line_Y": Y, f"{name}.line_slope": slope})
        out[f"{name}.orbit"] = first_integral.orbit(name)
    for circuit in ("QK", "OV"):
        C, dC = factorization.conserved_quantity(circuit)
        out.update({f"factorization.{circuit}.rate_factor": factorization.rate_factor(circuit),
                    f"factorization.{circuit}.conserved": C,
                    f"factorization.{circuit}.conserved_dt": dC,
                    f"factorization.{circuit}.effective_rate": factorization.effective_rate(circuit),
                    f"factorization.{circuit}.effective_rate_unbalanced":
                        factorization.effective_rate(circuit, balanced=False)})
    dW, gA, gB = factorization.induced_flow()
    out["factorization.induced_flow"] = dW
    out["CACO.alpha_on_orbit"] = first_integral.attention_on_orbit("CACO")
    out["sharpness.margin"] = sharpness.margin_at_loss()
    out["sharpness.state_equation"] = sharpness.state_equation()
    for key, value in sharpness.state_from_odds().items():
        out[f"sharpness.state.{key}"] = value
    for key, (expr, sign) in sharpness.sharpness_signs().items():
        out[f"sharpness.sign.{key}"] = expr
        out[f"sharpness.sign_value.{key}"] = sp.Integer(sign)
    out["asymptotics.time_integrand"] = asymptotics.time_integrand("CACO")
    for key, value in asymptotics.early_phase().items():
        out[f"asymptotics.early.{key}"] = value
    for key, value in asymptotics.late_time().items():
        out[f"asymptotics.late.{key}"] = value
    return out


def _namespace():
    import sympy as sp

    from .special_functions import wright_omega
    ns = {k: getattr(sp, k) for k in dir(sp) if not k.startswith("_")}
    from sympy.core.symbol import Str
    ns.update(wright_omega=wright_omega, Str=Str)
    return ns


def _user_cache(key):
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "qkov" / f"derived-{key}.json"


def _read(path, key):
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("key") == key else None


def write_cache(path: Path, key: str, exprs: dict) -> None:
    """Write ``exprs`` as srepr strings under ``key`` (sorted keys: byte-stable)."""
    import sympy as sp
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"key": key, "results": {k: sp.srepr(v) for k, v in exprs.items()}}
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")


_RESULTS = None


def results(*, rebuild: bool = False) -> dict:
    """All derived results ``{name: expr}``, from the cache when it is fresh."""
    global _RESULTS
    if _RESULTS is not None and not rebuild:
        return _RESULTS
    key = cache_key()
    data = None if rebuild else (_read(SHIPPED_CACHE, key) or _read(_user_cache(key), key))
    if data is None:
        exprs = derive_all()
        for path in (SHIPPED_CACHE, _user_cache(key)):
            try:
                write_cache(path, key, exprs)
                break
            except OSError:
                continue
        _RESULTS = exprs
        return exprs
    ns = _namespace()
    _RESULTS = {name: eval(text, ns) for name, text in data["results"].items()}  # noqa: S307 - our own srepr
    return _RESULTS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m derivations.catalog",
                                     description="Rebuild or check the cache of derived results.")
    parser.add_argument("--rebuild", action="store_true", help="derive everything and rewrite the shipped cache")
    parser.add_argument("--check", action="store_true", help="exit 1 if the shipped cache is stale")
    args = parser.parse_args(argv)
    key = cache_key()
    if args.check:
        fresh = _read(SHIPPED_CACHE, key) is not None
        print("shipped cache is " + ("fresh" if fresh else "STALE: run python -m derivations.catalog --rebuild"))
        return 0 if fresh else 1
    if args.rebuild:
        write_cache(SHIPPED_CACHE, key, derive_all())
        print(f"wrote {SHIPPED_CACHE} (key {key[:12]})")
        return 0
    for name, expr in results().items():
        print(f"{name}: {expr}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
