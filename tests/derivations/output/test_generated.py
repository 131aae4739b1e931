"""The generated numeric module: fresh, SymPy-free, and what it was generated from."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_generated_module_is_fresh():
    from derivations.catalog import STORE
    from derivations.output import generator_key
    from numerics import _generated
    key = STORE.key()
    assert _generated.CATALOG_KEY == key, "run: python -m derivations.catalog --rebuild"
    assert _generated.GENERATOR_KEY == generator_key(key), "run: python -m derivations.catalog --rebuild"


@pytest.mark.slow
def test_generated_module_regenerates_byte_identically():
    from derivations.catalog import STORE, results
    from derivations.output.numeric_codegen import (GENERATED_EXPRESSIONS, GENERATED_MODULE,
                                                    generate)
    module, exprs = generate(STORE.key(), results())
    assert module == GENERATED_MODULE.read_text()
    assert exprs == GENERATED_EXPRESSIONS.read_text()


def test_state_at_loss_cold_process_imports_no_sympy():
    code = ("import sys\n"
            "from numerics.dynamics.closed_form import state_at_loss\n"
            "st = state_at_loss([0.5, 1e-3], 10.0)\n"
            "from numerics.functions import lambdified as lam\n"
            "lam.reduced_rhs('FAFO', False).func(1., 1., 5, 50, 50, 20, 1, 1, 1, 1, 1, 1, 0, 0)\n"
            "print(sorted(k for k in sys.modules if k == 'sympy' or k.startswith('sympy.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.stdout.strip() == "[]"


def test_every_generated_function_names_its_catalog_source():
    from numerics import _generated
    text = (ROOT / "numerics" / "_generated.py").read_text()
    for match in re.finditer(r"def (\w+)\(.*\):\n    # from (.+)\n", text):
        assert match.group(2).strip()
    assert len(_generated.FUNCTIONS) > 40


#: A point inside every generated function's domain, by argument name.
_POINT = {"m": 5.0, "n": 50.0, "b": 50.0, "M": 20.0, "mu_OV": 2.0, "mu_QK": 1.5, "mu_OV_0": 0.3, "mu_QK_0": 0.2,
          "eta_QK": 0.7, "eta_OV": 1.3, "eta_Q": 0.9, "eta_K": 1.1, "eta_O": 0.8, "eta_V": 1.2, "C_QK": 2e-4,
          "C_OV": -3e-4, "L": 1.0, "s": 1.5, "r": 3.0, "p": 0.8, "eps": 0.1, "u": 1.5}


def test_expressions_match_their_functions():
    """Every generated function, in every backend it is printed for, computes the expression it was generated
    from (the derived one, as stored): SymPy evaluates that at 30 digits (Wright omega as LambertW(exp z)) at
    one point, to 1e-13 relative (measured: 2e-15). This checks the float rewrites of the printing
    (logaddexp, shares) and the printers against the derivation, not one backend against another."""
    import mpmath
    import sympy as sp
    from derivations.symbolic import wright_omega
    from numerics import _generated
    from numerics.functions.numeric_function import generated_function
    checked = set()
    for name in _generated.FUNCTIONS:
        f = generated_function(name, "numpy")
        assert set(f.names) <= set(_POINT), name
        values = [_POINT[a] for a in f.names]
        exprs = f.expr if isinstance(f.expr, tuple) else (f.expr,)
        refs = [float(sp.N(e.subs(dict(zip(f.args, values))).replace(wright_omega, lambda z: sp.LambertW(sp.exp(z))),
                           30)) for e in exprs]
        for backend in ("numpy", "mpmath", "math"):
            try:
                g = generated_function(name, backend)
            except ValueError:       # the math backend has no special functions
                assert backend == "math" and any(e.has(wright_omega, sp.Ei) for e in exprs), name
                continue
            got = g.func(*([mpmath.mpf(v) for v in values] if backend == "mpmath" else values))
            got = got if isinstance(got, (tuple, list)) else (got,)
            assert len(got) == len(refs), name
            for value, ref in zip(got, refs):
                assert float(value) == pytest.approx(ref, rel=1e-13, abs=0), (name, backend)
            checked.add((name, backend))
    assert {name for name, _ in checked} == set(_generated.FUNCTIONS)


def test_no_control_characters_in_sources():
    """No \\f, \\t etc. in docstrings where \\frac, \\tau were meant."""
    files = [*ROOT.glob("derivations/*.py"), ROOT / "numerics" / "functions" / "lambdified.py",
             ROOT / "numerics" / "dynamics" / "closed_form.py", ROOT / "numerics" / "_generated.py"]
    for path in files:
        text = path.read_text()
        assert not re.search(r"[\x00-\x08\x0b-\x1f]", text), path
        assert "\t" not in text, path


def test_every_generated_expression_reads_back():
    import json
    from derivations.symbolic import from_srepr
    data = json.loads((ROOT / "numerics" / "_generated_expressions.json").read_text())
    for name, entry in data["functions"].items():
        for text in entry["args"] + entry["exprs"]:
            from_srepr(text)


def test_wright_omega_against_mpmath():
    """The generated module's vectorized Wright omega (no scipy at import) to
    a few ulp of mpmath's lambertw(exp(z)), from underflow to huge z."""
    import mpmath
    import numpy as np
    from numerics.functions import wright_omega as _wright_omega
    z = np.concatenate([-np.logspace(-8, 3, 60), np.logspace(-8, 300, 120), [0.0, 1.0, -745.0]])
    w = _wright_omega(z)
    for zi, wi in zip(z, w):
        ref = float(mpmath.lambertw(mpmath.exp(mpmath.mpf(zi))).real)
        assert abs(wi - ref) <= 4e-15 * ref or (zi < -700 and abs(wi - ref) < 1e-300), zi
    assert _wright_omega(np.inf) == np.inf and np.isnan(_wright_omega(np.nan))
    assert np.shape(_wright_omega(1.0)) == ()
