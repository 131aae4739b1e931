"""The numeric function with named arguments: run-time lambdify and the generated registry."""
import pytest

from numerics.functions.numeric_function import generated_function, numeric


def test_numeric_helper_errors_and_names():
    import sympy as sp
    from derivations.symbolic import m, n, mu_QK
    with pytest.raises(ValueError, match="backend"):
        numeric(m, (m,), backend="torch")
    with pytest.raises(ValueError, match="free symbols"):
        numeric(m + n, (m,))
    f = numeric({"a": m * sp.exp(mu_QK), "b": n}, (mu_QK, m, n))
    assert f(0.0, m=2.0, n=3.0) == {"a": 2.0, "b": 3.0}
    with pytest.raises(TypeError, match="missing"):
        f(0.0, m=2.0)
    with pytest.raises(TypeError, match="unexpected"):
        f(0.0, m=2.0, n=1.0, q=1)
    # the expm1 rewrite is applied
    g = numeric(sp.exp(m) - 1, (m,))
    assert g(1e-20) == 1e-20


@pytest.mark.parametrize("name", [[], {}, "nope", None])
def test_generated_function_names_an_unknown_name(name):
    """A list was the registry's TypeError (unhashable)."""
    with pytest.raises(ValueError, match=r"^no generated function .* \(name must be a key of numerics._generated.FUNCTIONS\)"):
        generated_function(name)


def test_numeric_runs_nothing_it_reads(tmp_path):
    """lambdify writes the names of functions (and of symbols that are not arguments) into the code it
    runs: an undefined function is refused, and text is not parsed (sympify would evaluate it)."""
    import sympy as sp
    x = sp.Symbol("x")
    marker = tmp_path / "ran"
    F = sp.Function(f"__import__('pathlib').Path({str(marker)!r}).touch() or abs")
    with pytest.raises(ValueError, match="undefined functions"):
        numeric(x + F(x), (x,))
    with pytest.raises(ValueError):
        numeric(f"__import__('pathlib').Path({str(marker)!r}).touch()", (x,))
    assert not marker.exists()


def test_generated_function_errors():
    with pytest.raises(ValueError, match="backend"):
        generated_function("alpha", "torch")
    with pytest.raises(ValueError, match="no generated function"):
        generated_function("no_such_function")
    with pytest.raises(ValueError, match="not available for the 'math' backend"):
        generated_function("state_bounds", "math")
    f = generated_function("alpha", "mpmath")
    assert f.name == "alpha" and f.backend == "mpmath" and f.names == ("mu_QK", "m", "n")
