r"""Generate the numeric module ``numerics/_generated.py`` from the catalog.

Every numeric function of :mod:`numerics` is printed here, ahead of time, by SymPy's code printers from a
derived expression of :func:`derivations.catalog.records` (or of the derivation functions the catalog key
covers), so that numeric code never imports SymPy:

* ``numpy``: ``sympy.printing.numpy.SciPyPrinter`` (vectorized float64; ``wright_omega`` and ``Ei``
  -> :mod:`numerics.functions.special_functions`, which keeps SciPy out of the cold start);
* ``mpmath``: :class:`sympy.printing.pycode.MpmathPrinter` (scalars at the current ``mpmath.mp.dps``;
  ``wright_omega(z) -> lambertw(exp(z))``);
* ``math``: ``sympy.printing.pycode.PythonCodePrinter`` (plain floats, for functions without
  special functions).

The only changes made to a derived expression before printing are SymPy operations (a derivative, a
Jacobian, a substitution, ``solve``) and the *mechanical* floating-point rewrites of
:mod:`derivations.output.float_rewrites`, which leave its value unchanged (``as_logaddexp`` for the
float backends only).

The module written starts with the catalog key it was generated from; the expressions themselves go to
``numerics/_generated_expressions.json`` (srepr text, read back only on demand by
:mod:`numerics.functions.numeric_function`). Its ``GENERATOR_KEY`` covers this module and the
rewrites (:func:`generator_key`).

Rebuild: ``python -m derivations.catalog --rebuild`` (writes the cache, the generated module and its
expressions); a test fails while they are stale.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import sympy as sp
from sympy.codegen.cfunctions import expm1
from sympy.printing.numpy import SciPyPrinter
from sympy.printing.pycode import MpmathPrinter, PythonCodePrinter

from ..symbolic import symbols as S
from ..core.vocabulary import BACKENDS, PARAMETERIZATIONS
from ..symbolic.special_functions import lambert_to_wright_omega, wright_omega
from . import float_rewrites
from .float_rewrites import as_log1p, as_logaddexp, omega_identity, stabilize

__all__ = ["ROOT", "GENERATED_MODULE", "GENERATED_EXPRESSIONS", "PARAMS", "eps", "x_logp", "c_sym",
           "FunctionSpec", "function_specs", "HEADER", "generator_key", "generate", "write"]

ROOT = Path(__file__).resolve().parents[2]
GENERATED_MODULE = ROOT / "numerics" / "_generated.py"
GENERATED_EXPRESSIONS = ROOT / "numerics" / "_generated_expressions.json"

#: The parameters every flow function takes after its state variables.
PARAMS = (S.m, S.n, S.b, S.M, S.eta_QK, S.eta_OV, S.eta_Q, S.eta_K, S.eta_O, S.eta_V, S.C_QK, S.C_OV)
#: Initialization scale of factorized circuits.
eps = sp.Symbol("eps", positive=True)
#: log of the attention odds, x = log p.
x_logp = sp.Symbol("x", real=True)
#: Constant of the state equation, c = r (M-1) s^2 / (2 M b).
c_sym = sp.Symbol("c", positive=True)


# --------------------------------------------------------------------------
# The functions to generate
# --------------------------------------------------------------------------

class FunctionSpec(NamedTuple):
    """One generated function.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"reduced_rhs[FACO,balanced]"``.
    args : tuple[str]
        Argument names (SymPy symbol names), positional order.
    exprs : tuple[sympy.Expr]
        The expression(s) returned (a tuple when ``len > 1`` or ``keys``).
    keys : tuple[str] or None
        If set, the values are returned as a dict with these keys (by
        :class:`numerics.functions.numeric_function.NumericFunction`; the raw function
        returns a tuple).
    single : bool
        One expression, returned as is (not as a 1-tuple).
    source : str
        The catalog key(s) or derivation the expressions come from.
    stable : bool
        Apply :func:`~derivations.output.float_rewrites.stabilize` before printing.
    symbols : tuple[sympy.Symbol]
        The argument symbols (with assumptions).
    """
    name: str
    args: tuple
    exprs: tuple
    keys: object
    single: bool
    source: str
    stable: bool
    symbols: tuple


def _odds_of_mu_QK(res):
    """p as a function of mu_QK: the inverse of the state's ``mu_QK(p)`` (solve)."""
    sol = sp.solve(sp.Eq(res["sharpness.state.mu_QK"], S.mu_QK), S.p)
    if len(sol) != 1:  # pragma: no cover
        raise ArithmeticError(f"mu_QK(p) not uniquely invertible: {sol}")
    return sol[0]


def _split_r(G):
    """G = G0 + G_r with G_r the part linear in r (checked: F is linear in r)."""
    if sp.simplify(sp.diff(G, S.r, 2)) != 0:  # pragma: no cover
        raise ArithmeticError("state equation is not linear in r")
    G_r = sp.expand(sp.diff(G, S.r) * S.r)
    return sp.expand(G - G_r), G_r


def _spec_adder(specs: dict):
    """``add(name, args, exprs, source, stable=True)``: put one :class:`FunctionSpec` into ``specs``."""
    def add(name, args, exprs, source, stable=True):
        single, keys = not isinstance(exprs, (tuple, list, dict)), None
        if isinstance(exprs, dict):
            keys, exprs = tuple(exprs), tuple(exprs.values())
        exprs = tuple(sp.sympify(e) for e in ((exprs,) if single else exprs))
        missing = set().union(*(e.free_symbols for e in exprs)) - set(args)
        if missing:  # pragma: no cover - a generator bug
            raise ValueError(f"{name}: args lack {sorted(map(str, missing))}")
        if stable:
            exprs = tuple(stabilize(e) for e in exprs)
        specs[name] = FunctionSpec(name, tuple(str(a) for a in args), exprs, keys, single, source,
                                   stable, tuple(args))
    return add


def _model_specs(add, res):
    """The model: attention, the loss of the margin and of the state."""
    alpha_expr = res["model.alpha"]
    add("alpha", (S.mu_QK, S.m, S.n), 1 / sp.expand(1 / alpha_expr), "model.alpha")
    loss_s = res["model.loss_alpha"].subs(S.alpha, S.s / S.mu_OV)
    loss_s = as_log1p(sp.log(sp.expand(sp.exp(loss_s))))       # one logarithm: log1p((M-1) e^{-s})
    add("loss_of_margin", (S.s, S.M), loss_s, "model.loss_alpha")
    add("loss", (S.mu_OV, S.mu_QK, S.m, S.n, S.M),
        loss_s.subs(S.s, S.mu_OV / sp.expand(1 / alpha_expr)), "model.loss_alpha, model.alpha")
    return alpha_expr


def _parameterization_specs(add, res, P, alpha_expr):
    """One parameterization: reduced right-hand sides and Jacobians, first integral, line
    coordinates, orbit and time integrand, initial point."""
    from ..tasks.paper import factorization
    for balanced in (True, False):
        if balanced or P == "CACO":
            odes = (res[f"{P}.dmu_OV_dt"], res[f"{P}.dmu_QK_dt"])
            src = f"{P}.dmu_OV_dt, {P}.dmu_QK_dt"
        else:
            odes = tuple(res[f"{P}.dmu_{c}_dt_unbalanced_alpha"].subs(S.alpha, alpha_expr)
                         for c in ("OV", "QK"))
            src = f"{P}.dmu_OV_dt_unbalanced_alpha, {P}.dmu_QK_dt_unbalanced_alpha, model.alpha"
        tag = f"[{P},{'balanced' if balanced else 'unbalanced'}]"
        add("reduced_rhs" + tag, (S.mu_OV, S.mu_QK, *PARAMS), odes, src)
        J = sp.Matrix(odes).jacobian([S.mu_OV, S.mu_QK])
        add("reduced_jacobian" + tag, (S.mu_OV, S.mu_QK, *PARAMS), tuple(J),
            "Jacobian of " + src, stable=False)
    H = res[f"{P}.first_integral"]
    add(f"first_integral[{P}]", (S.mu_OV, S.mu_QK, *PARAMS), H, f"{P}.first_integral", stable=False)
    add(f"first_integral_scale[{P}]", (S.mu_OV, S.mu_QK, *PARAMS),
        sum(sp.Abs(t) for t in sp.Add.make_args(H)),
        f"sum of |terms| of {P}.first_integral (its cancellation scale)", stable=False)
    add(f"line_coordinates[{P}]", (S.mu_OV, S.mu_QK, *PARAMS),
        {"X": res[f"{P}.line_X"], "Y": res[f"{P}.line_Y"], "slope": res[f"{P}.line_slope"]},
        f"{P}.line_X, {P}.line_Y, {P}.line_slope", stable=False)
    orbit = res[f"{P}.orbit"]
    if not isinstance(orbit, sp.Equality):
        add(f"orbit[{P}]", (S.mu_OV, S.mu_OV_0, S.mu_QK_0, *PARAMS), omega_identity(orbit),
            f"{P}.orbit", stable=False)
        integrand = (1 / res[f"{P}.dmu_OV_dt"]).subs(S.mu_QK, orbit)
        add(f"time_integrand[{P}]", (S.mu_OV, S.mu_OV_0, S.mu_QK_0, *PARAMS),
            sp.simplify(omega_identity(integrand)), f"1/{P}.dmu_OV_dt on {P}.orbit", stable=False)
    residual = orbit.lhs - orbit.rhs if isinstance(orbit, sp.Equality) else S.mu_QK - orbit
    add(f"orbit_residual[{P}]", (S.mu_OV, S.mu_QK, S.mu_OV_0, S.mu_QK_0, *PARAMS), residual,
        f"{P}.orbit", stable=False)
    add(f"initial_point[{P}]", (eps, S.b),
        tuple(sp.sympify(e) for e in factorization.initial_point(P, eps)),
        f"derivations.tasks.paper.factorization.initial_point({P!r}, eps)", stable=False)


def _sharpness_specs(add, res):
    """The state at a fixed loss (CACO, zero init, eta_OV = 1, r = eta_QK)."""
    # log((M-1)/expm1(L)) split into log(M-1) - log(expm1(L)): no overflow of the quotient at tiny L
    add("margin_at_loss", (S.L, S.M), sp.expand_log(res["sharpness.margin"], force=True),
        "sharpness.margin")
    F = res["sharpness.state_equation"]
    spsr = (S.p, S.s, S.r, S.m, S.n, S.b, S.M)
    add("state_equation", spsr, F, "sharpness.state_equation", stable=False)
    add("state_equation_dp", spsr, sp.diff(F, S.p), "d/dp sharpness.state_equation", stable=False)
    pu = _odds_of_mu_QK(res)
    add("odds_of_mu_QK", (S.mu_QK, S.m, S.n), pu, "inverse of sharpness.state.mu_QK")
    G = sp.expand(sp.expand_log(F.subs(S.p, pu), force=True))
    G0, G_r = _split_r(G)
    E = sp.Dummy("E")
    G0 = sp.expand(G0.subs(sp.exp(S.mu_QK), E + 1)).subs(E, expm1(S.mu_QK))
    G_r = sp.factor(G_r)
    dG = sp.diff(G0, S.mu_QK) + sp.diff(G_r, S.mu_QK)
    add("state_equation_mu", (S.mu_QK, S.s, S.r, S.m, S.n, S.b, S.M), (G0 + G_r, dG),
        "sharpness.state_equation at p = odds_of_mu_QK, and its mu_QK-derivative", stable=False)
    add("state_bounds", (S.s, S.r, S.m, S.n, S.b, S.M), _state_bounds(res),
        "Wright-omega brackets of sharpness.state_equation", stable=False)
    state = {k: res[f"sharpness.state.{k}"] for k in ("alpha", "mu_QK", "mu_OV")}
    add("state_from_odds", (S.p, S.s, S.m, S.n, S.b, S.M), state, "sharpness.state.*", stable=False)
    out = {k: sp.simplify(state[k].subs(S.p, pu)) for k in ("alpha", "mu_OV")}
    out["alpha"] = 1 / sp.expand(1 / out["alpha"])
    out["p"] = pu
    add("state_from_mu_QK", (S.mu_QK, S.s, S.m, S.n, S.b, S.M), out,
        "sharpness.state.* at p = odds_of_mu_QK")


def function_specs(res: dict) -> dict:
    """``{name: FunctionSpec}`` of every generated function, from the catalog's
    results ``res`` (``{name: expr}``; SymPy work, several seconds).

    Parameters
    ----------
    res : dict[str, sympy.Expr]

    Returns
    -------
    dict[str, FunctionSpec]
    """
    from ..tasks.paper import factorization
    specs = {}
    add = _spec_adder(specs)
    alpha_expr = _model_specs(add, res)
    for P in PARAMETERIZATIONS:
        _parameterization_specs(add, res, P, alpha_expr)
    for circuit in ("QK", "OV"):
        add(f"initial_conserved[{circuit}]", (eps, *PARAMS), factorization.initial_conserved(circuit, eps),
            f"derivations.tasks.paper.factorization.initial_conserved({circuit!r}, eps)", stable=False)
    add("circuit_magnitudes", (S.mu_OV, S.mu_QK, S.b),
        {c: factorization.circuit_symbols(c).magnitude for c in ("QK", "OV")},
        "derivations.tasks.paper.factorization.circuit_symbols(...).magnitude (CACO's solved mu map)", stable=False)
    _sharpness_specs(add, res)
    return specs


def _state_bounds(res):
    r"""Four Wright-omega candidates bracketing the root of the state equation,
    in u = mu_QK (see :func:`numerics.dynamics.closed_form.state_at_loss`).

    In x = log p the state equation reads :math:`G_0(x) - k(1+e^{-x})^2` with
    :math:`k = r s^2 (M-1)/(2Mb)` (read off the derived F; the shape is
    checked). From :math:`\max(1, e^{-2x}) \le (1+e^{-x})^2 \le 4\max(1, e^{-2x})`
    the equations :math:`G_0 = k`, :math:`G_0|_{e^x\to1} = k e^{-2x}`,
    :math:`G_0 = 4k`, :math:`G_0|_{e^x\to0} = 4k e^{-2x}` are of Lambert type;
    SymPy solves them (rewritten with Wright omega). The caller checks signs."""
    X = x_logp
    G = sp.expand(sp.expand_log(res["sharpness.state_equation"].subs(S.p, sp.exp(X)), force=True))
    G0, G_r = _split_r(G)
    k = sp.factor(-G_r.subs(X, 0) / 4)
    if sp.simplify(G_r + k * (1 + sp.exp(-X)) ** 2) != 0:  # pragma: no cover
        raise ArithmeticError(f"unexpected r-term of the state equation: {G_r}")

    def root(eq):
        sol = sp.solve(eq.subs(k, c_sym), X)
        return sp.simplify(lambert_to_wright_omega(sp.expand_log(sol[0], force=True)))
    kc = c_sym
    cands = (root(G0 - kc), root(G0.subs(sp.exp(X), 1) - kc * sp.exp(-2 * X)),
             root(G0 - 4 * kc), root(G0.subs(sp.exp(X), 0) - 4 * kc * sp.exp(-2 * X)))
    u_of_x = sp.expand_log(res["sharpness.state.mu_QK"].subs(S.p, sp.exp(X)), force=True)
    return tuple(sp.expand(u_of_x.subs(X, cnd)).subs(c_sym, k) for cnd in cands)


# --------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------

def _printer(base, functions):
    """A subclass of the SymPy printer ``base`` printing each SymPy function
    named in ``functions`` as a call of the given Python name."""
    def method(target):
        def _print(self, expr):
            return f"{target}({', '.join(self._print(a) for a in expr.args)})"
        return _print
    return type(f"_{base.__name__}", (base,), {f"_print_{name}": method(target)
                                               for name, target in functions.items()})


_NumPyPrinter = _printer(SciPyPrinter, {"wright_omega": "special_functions.wright_omega",
                                        "Ei": "special_functions.expi"})
_MpmathPrinter = _printer(MpmathPrinter, {"wright_omega": "special_functions.wright_omega_mpmath",
                                          "Ei": "mpmath.ei", "expm1": "mpmath.expm1",
                                          "log1p": "mpmath.log1p"})
_MathPrinter = _printer(PythonCodePrinter, {"expm1": "math.expm1", "log1p": "math.log1p",
                                            "logaddexp": "special_functions.logaddexp_math"})
_PRINTERS = {"numpy": _NumPyPrinter, "mpmath": _MpmathPrinter, "math": _MathPrinter}


def _python_name(name, backend):
    return (name.replace("[", "__").replace("]", "").replace(",", "_") + "__" + backend)


def _print_function(spec, backend):
    """Source of one generated function, or None when the backend cannot print it."""
    exprs = spec.exprs
    if backend in ("numpy", "math"):
        exprs = tuple(as_logaddexp(e) for e in exprs)
    if backend == "math" and any(e.has(wright_omega, sp.Ei) for e in exprs):
        return None
    printer = _PRINTERS[backend]({"fully_qualified_modules": True, "strict": True})
    # common subexpressions once (e.g. the four wright_omega(...) of the time integrand)
    temps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_t"), optimizations=None, order="none")
    body = [printer.doprint(e) for e in reduced]
    ret = body[0] if spec.single else "(" + ", ".join(body) + ("," if len(body) == 1 else "") + ")"
    lines = [f"def {_python_name(spec.name, backend)}({', '.join(spec.args)}):",
             f"    # from {spec.source}"]
    lines += [f"    {sym} = {printer.doprint(sub)}" for sym, sub in temps]
    lines.append(f"    return {ret}")
    return "\n".join(lines)


HEADER = '''"""Numeric functions generated from the derivation catalog. DO NOT EDIT.

Generated by ``python -m derivations.catalog --rebuild`` (module
:mod:`derivations.output.numeric_codegen`) from the catalog with key

    {key}

Each function is printed by SymPy's code printers (NumPy/SciPy, mpmath,
math) from a derived expression named in the comment beside it; the
expressions are in ``_generated_expressions.json``. Use them through
:mod:`numerics.functions.lambdified`, which names the arguments.
"""
import math

import numpy

from .functions import special_functions

#: Key of the derivation catalog these functions were generated from.
CATALOG_KEY = "{key}"
#: SHA-256 of the catalog key and the generator's source (staleness check).
GENERATOR_KEY = "{generator_key}"


class _LazyMpmath:
    """``mpmath``, imported on first use (the float paths never need it)."""

    def __getattr__(self, name):
        import mpmath as _mpmath
        globals()["mpmath"] = _mpmath
        return getattr(_mpmath, name)


mpmath = _LazyMpmath()
'''


def generator_key(key: str) -> str:
    """SHA-256 over the catalog ``key``, this module's source and that of
    :mod:`derivations.output.float_rewrites`: the generated module is fresh when
    its ``GENERATOR_KEY`` equals this.

    Parameters
    ----------
    key : str

    Returns
    -------
    str
    """
    import hashlib
    sources = (Path(__file__), Path(float_rewrites.__file__))
    return hashlib.sha256(key.encode() + b"".join(p.read_bytes() for p in sources)).hexdigest()


def generate(key: str, res: dict):
    """``(module source, expressions JSON text)`` for the catalog ``key`` and
    its results ``res`` (``{name: expr}``).

    Parameters
    ----------
    key : str
    res : dict[str, sympy.Expr]

    Returns
    -------
    (str, str)
    """
    specs = function_specs(res)
    parts = [HEADER.replace("{key}", key).replace("{generator_key}", generator_key(key))]
    registry = []
    expressions = {}
    printed = {}      # (args, exprs) -> registry name of the first spec with them
    for name, spec in specs.items():
        available = {}
        same = printed.setdefault((spec.args, spec.exprs, spec.single), name)
        for backend in BACKENDS:
            src = _print_function(spec, backend)
            if src is not None and same == name:
                parts.append("\n" + src + "\n")
            if src is not None:
                available[backend] = _python_name(same, backend)   # identical spec: reuse the function
        keys = spec.keys
        entry = ", ".join(f"{b!r}: {f}" for b, f in available.items())
        registry.append(f"    {name!r}: ({spec.args!r}, {keys!r}, {{{entry}}}),")
        expressions[name] = {"args": [sp.srepr(a) for a in spec.symbols],
                             "exprs": [sp.srepr(e) for e in spec.exprs],
                             "single": spec.single, "source": spec.source}
    parts.append("\n#: name -> (argument names, dict keys or None, {backend: function})\n"
                 "FUNCTIONS = {\n" + "\n".join(registry) + "\n}\n")
    text = "\n".join(p.rstrip("\n") + "\n" for p in parts)
    return text, json.dumps({"key": key, "functions": expressions}, indent=1, sort_keys=True) + "\n"


def write(key: str, res: dict) -> list:
    """Write the generated module and its expressions (atomically); returns the paths.

    Parameters
    ----------
    key : str
    res : dict[str, sympy.Expr]

    Returns
    -------
    list of pathlib.Path
    """
    from ..core.atomic_file import atomic_write_text
    module, exprs = generate(key, res)
    atomic_write_text(GENERATED_MODULE, module)
    atomic_write_text(GENERATED_EXPRESSIONS, exprs)
    return [GENERATED_MODULE, GENERATED_EXPRESSIONS]
