"""Checks of the symbolic core: each derived result against the published
equations, exact explicit instances, or an independent numeric computation."""
import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st
from scipy.integrate import solve_ivp

from derivations.tasks.paper import asymptotics, factorization, first_integral, reduction, sharpness
from derivations.catalog import STORE, derive_all, records, results
from derivations.core import PARAMETERIZATIONS, check_parameterization
from derivations.tasks.paper.model import family
from derivations.symbolic import wright_omega
from derivations.symbolic import (M, b, eta_K, eta_O, eta_OV, eta_Q, eta_QK, eta_V, m, mu_OV,
                                  mu_OV_0, mu_QK, mu_QK_0, n)

PAPER = {m: 5, n: 50, b: 50, M: 20}


# ---------------------------------------------------------------- reduction

def test_derived_caco_equals_published_identically():
    """alpha, L, dmu_OV/dt, dmu_QK/dt derived from the model minus the paper's: all 0."""
    assert reduction.published_difference() == (0, 0, 0, 0)


FAST_INSTANCES = [(2, p_) for p_ in PARAMETERIZATIONS]
SLOW_INSTANCES = [(3, p_) for p_ in PARAMETERIZATIONS] + [(4, p_) for p_ in PARAMETERIZATIONS]


@pytest.mark.parametrize("M_value,param", FAST_INSTANCES)
def test_family_invariant_exactly_on_explicit_instance(M_value, param):
    """Full symbolic-matrix gradient flow at a family point == family flow (exact)."""
    assert reduction.invariance_residual(M_value, param) == []


@pytest.mark.slow
@pytest.mark.parametrize("M_value,param", SLOW_INSTANCES)
def test_family_invariant_exactly_on_larger_instances(M_value, param):
    assert reduction.invariance_residual(M_value, param) == []


def test_invariance_check_can_fail():
    """Perturb the predicted flow: the residual must become nonzero."""
    from derivations.tasks.paper import model
    fam = family("CACO")
    original = fam.norm2[model.theta_OV]
    fam.norm2[model.theta_OV] = original + 1
    model._family_flow.cache_clear()
    try:
        assert reduction.invariance_residual(2, "CACO") != []
    finally:
        fam.norm2[model.theta_OV] = original
        model._family_flow.cache_clear()


def test_loss_on_explicit_family_equals_generic_loss():
    from derivations.tasks.paper.explicit import explicit_family_point, explicit_model
    for M_value in (2, 3):
        em = explicit_model(M_value, "FAFO")
        point = explicit_family_point(M_value, "FAFO")
        subs = {}
        for name, W in em.params.items():
            subs.update(dict(zip(W, point[name])))
        generic = family("FAFO").loss().subs(M, M_value)
        vals = {sp.Symbol(x, real=True): v for x, v in (("a_Q", 0.7), ("c_K", 1.3), ("o_O", 0.4), ("v_V", 2.1), ("w_V", -0.3))}
        vals.update({m: 3, n: 7, b: 2})
        assert abs(float(em.loss.subs(subs).subs(vals)) - float(generic.subs(vals))) < 1e-12


# ------------------------------------------------------------ factorization

def test_induced_flow_and_conservation():
    dW, gA, gB = factorization.induced_flow()
    assert "G*B.T*B" in str(dW) and "A*A.T*G" in str(dW)
    assert str(gA) == "G*B.T" and str(gB) == "A.T*G"
    assert isinstance(factorization.conserved_matrix_derivative(), sp.ZeroMatrix)
    for c in ("QK", "OV"):
        assert factorization.conserved_quantity(c)[1] == 0


def test_rate_factor_form():
    from derivations.tasks.paper.model import a_Q, c_K, o_O, v_V
    assert sp.simplify(factorization.rate_factor("QK") - (eta_Q * c_K**2 + eta_K * a_Q**2)) == 0
    assert sp.simplify(factorization.rate_factor("OV") - (eta_O * v_V**2 + eta_V * o_O**2)) == 0


def test_effective_rates_replace_the_rate_of_each_factorized_circuit():
    """The one substitution of the paper and the engine: a factorized circuit's collapsed rate
    -> its effective rate, balanced or not; collapsed circuits keep theirs."""
    assert factorization.effective_rates("CACO") == {}
    assert factorization.effective_rates("CAFO") == {eta_OV: factorization.effective_rate("OV")}
    assert factorization.effective_rates("FACO", balanced=False) == {
        eta_QK: factorization.effective_rate("QK", balanced=False)}
    assert list(factorization.effective_rates("FAFO")) == [eta_QK, eta_OV]


def _balanced_factors(circuit: str):
    """Factor values on the balanced level set (C = 0) with product P:
    ``a = sqrt(P) (eta_A/eta_B)^(1/4)``, ``c = sqrt(P) (eta_B/eta_A)^(1/4)``,
    as a substitution dict in terms of mu (P = b mu_QK or sqrt(b) mu_OV).

    Parameters
    ----------
    circuit : {"QK", "OV"}
        The factorized circuit.

    Returns
    -------
    dict[sympy.Symbol, sympy.Expr]
        ``{a: ..., c: ...}``, in mu_QK (QK) or mu_OV (OV), b and the factor rates.

    Raises
    ------
    ValueError
        If ``circuit`` is not "QK" or "OV".
    """
    cs = factorization.circuit_symbols(circuit)
    (fa, fb), (ra, rb), P = cs.factors, cs.factor_rates, cs.magnitude
    return {fa: sp.sqrt(P) * (ra / rb) ** sp.Rational(1, 4), fb: sp.sqrt(P) * (rb / ra) ** sp.Rational(1, 4)}


@pytest.mark.parametrize("param", ["CAFO", "FACO", "FAFO"])
def test_factorized_odes_equal_family_flow_on_balanced_factors(param):
    """The reduced ODEs built with the effective rate equal the chain rule on the
    factor coordinates evaluated on the balanced level set (independent route)."""
    from derivations.core import qk_factorized, ov_factorized
    direct = reduction.family_mu_flow(param)
    subs = {}
    if qk_factorized(param):
        subs.update(_balanced_factors("QK"))
    else:
        subs[sp.Symbol("theta_QK", real=True)] = b * mu_QK
    if ov_factorized(param):
        subs.update(_balanced_factors("OV"))
    else:
        subs[sp.Symbol("theta_OV", real=True)] = sp.sqrt(b) * mu_OV
    derived = reduction.reduced_odes(param, in_alpha=True)
    rng = np.random.default_rng(1)
    alpha_sym = sp.Symbol("alpha", positive=True)
    for _ in range(5):
        vals = {x: float(v) for x, v in zip((m, n, b, eta_Q, eta_K, eta_O, eta_V, eta_QK, eta_OV, mu_OV, mu_QK, alpha_sym),
                                            rng.uniform(0.2, 3, 12))}
        vals[M] = 5
        for d, e in zip(direct, derived):
            x, y = float(d.subs(subs).subs(vals)), float(e.subs(vals))
            assert math.isclose(x, y, rel_tol=1e-12)


@given(mu_ov=st.floats(0.05, 5), mu_qk=st.floats(0.05, 5), eq=st.floats(0.1, 10), ek=st.floats(0.1, 10),
       eo=st.floats(0.1, 10), ev=st.floats(0.1, 10), M_value=st.integers(2, 6))
def test_effective_rate_matches_full_matrix_flow(mu_ov, mu_qk, eq, ek, eo, ev, M_value):
    """d(W_QK)/dt and d(W_OV)/dt of the full NumPy matrix flow at a balanced family
    point equal the collapsed flow times the derived effective rate."""
    from numerics.model import AttentionModel
    from _family import family_params
    mdl_f = AttentionModel("FAFO", m=3, n=20, b=4, M=M_value, eta_Q=eq, eta_K=ek, eta_O=eo, eta_V=ev)
    mdl_c = AttentionModel("CACO", m=3, n=20, b=4, M=M_value, eta_QK=1.0, eta_OV=1.0)
    bq = _balanced_factors("QK")
    bo = _balanced_factors("OV")
    vals = {b: 4, mu_QK: mu_qk, mu_OV: mu_ov, eta_Q: eq, eta_K: ek, eta_O: eo, eta_V: ev}
    a, c = (float(v.subs(vals)) for v in bq.values())
    o, v = (float(x.subs(vals)) for x in bo.values())
    pf = family_params(mdl_f, mu_ov, mu_qk, a=a, o=o, w=0.1)
    pc = family_params(mdl_c, mu_ov, mu_qk)
    _, gf = mdl_f.loss_and_grad(pf)
    _, gc = mdl_c.loss_and_grad(pc)
    dWQK = -(eq * gf["W_Q"] @ pf["W_K"].T + ek * pf["W_Q"] @ gf["W_K"].T)
    dWOV = -(eo * gf["W_O"] @ pf["W_V"] + ev * pf["W_O"] @ gf["W_V"])
    rate_qk = float(factorization.effective_rate("QK").subs(vals))
    rate_ov = float(factorization.effective_rate("OV").subs(vals))
    np.testing.assert_allclose(dWQK, -rate_qk * gc["W_QK"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(dWOV, -rate_ov * gc["W_OV"], rtol=1e-9, atol=0)


# ------------------------------------------------------- first integrals

@pytest.mark.parametrize("param", PARAMETERIZATIONS)
def test_first_integral_is_conserved_symbolically(param):
    assert first_integral.dH_dt(param) == 0


def _rhs(param, values):
    d_ov, d_qk = reduction.reduced_odes(param)
    f = sp.lambdify((mu_OV, mu_QK), [d_ov.subs(values), d_qk.subs(values)], "numpy")
    return lambda t, y: f(y[0], y[1])


@settings(max_examples=15)
@given(param=st.sampled_from(PARAMETERIZATIONS), mm=st.floats(0.5, 10), nn=st.floats(1, 100),
       bb=st.floats(1, 100), MM=st.integers(2, 30), rq=st.floats(0.1, 10), ro=st.floats(0.1, 10))
def test_first_integral_conserved_along_solve_ivp(param, mm, nn, bb, MM, rq, ro):
    values = {m: mm, n: nn, b: bb, M: MM, eta_QK: rq, eta_OV: ro, eta_Q: rq, eta_K: rq, eta_O: ro, eta_V: ro}
    y0 = [0.05 if param[2] == "F" else 0.0, 0.05 if param[0] == "F" else 0.0]
    sol = solve_ivp(_rhs(param, values), (0, 200 * bb), y0, method="DOP853", rtol=1e-12, atol=1e-14,
                    dense_output=True)
    assert sol.success
    H = sp.lambdify((mu_OV, mu_QK), first_integral.first_integral(param).subs(values), "mpmath")
    h0 = H(*y0)
    for y in sol.y.T[:: max(1, sol.y.shape[1] // 20)]:
        assert abs(H(*y) - h0) <= 1e-8 * max(abs(h0), 1.0)


def test_orbit_solves_first_integral():
    for param in ("CACO", "CAFO"):
        H = first_integral.first_integral(param)
        orb = first_integral.orbit(param)
        vals = {m: 5, n: 50, b: 50, M: 20, eta_QK: 3.0, eta_OV: 1.0, eta_O: 1.0, eta_V: 1.0,
                mu_OV_0: 0.1, mu_QK_0: 0.2}
        mp_omega = {"wright_omega": lambda z: mpmath.lambertw(mpmath.exp(z)).real}
        for mu in (0.1, 1.0, 10.0, 200.0):
            q = sp.lambdify([], orb.subs(vals).subs(mu_OV, mu), [mp_omega, "mpmath"])()
            h = H.subs(vals)
            assert abs(float(h.subs({mu_OV: mu, mu_QK: q})) - float(h.subs({mu_OV: 0.1, mu_QK: 0.2}))) < 1e-9 * 100
    for param in ("FACO", "FAFO"):
        assert isinstance(first_integral.orbit(param), sp.Eq)
        assert first_integral.orbit(param).has(sp.Ei)


def test_attention_on_orbit_is_omega_over_one_plus_omega():
    expr = first_integral.attention_on_orbit("CACO")
    (om,) = expr.atoms(wright_omega)
    assert sp.simplify(expr - om / (1 + om)) == 0


# ---------------------------------------------------------------- sharpness

def test_sharpness_signs():
    signs = {k: v for k, (_, v) in sharpness.sharpness_signs().items()}
    assert signs == {"dF/dp": 1, "dF/dr": -1, "dp/dr": 1, "dalpha/dr": 1, "dmu_QK/dr": 1, "dmu_OV/dr": -1}


def test_margin_inverts_loss():
    loss = family("CACO").reduced_loss()
    s_L = sharpness.margin_at_loss()
    L_ = sp.Symbol("L", positive=True)
    for Lv, Mv in ((0.3, 20), (1e-3, 3), (2.0, 10)):
        sv = float(s_L.subs({L_: Lv, M: Mv}))
        assert math.isclose(float(loss.subs({sp.Symbol("alpha", positive=True) * mu_OV: sv}).subs(
            {sp.Symbol("alpha", positive=True): 1, mu_OV: sv, M: Mv})), Lv, rel_tol=1e-12)


@settings(max_examples=20)
@given(L_=st.floats(1e-6, 2.5), r1=st.floats(1e-3, 1e3), factor=st.floats(1.01, 100))
def test_alpha_star_increases_with_ratio(L_, r1, factor):
    from numerics.dynamics.closed_form import state_at_loss
    a = state_at_loss(L_, r1)
    bb = state_at_loss(L_, r1 * factor)
    assert bb.alpha > a.alpha and bb.mu_QK > a.mu_QK and bb.mu_OV < a.mu_OV


def test_state_at_loss_lies_on_orbit_and_level():
    from numerics.dynamics.closed_form import state_at_loss
    st_ = state_at_loss(0.05, 7.0)
    point = {mu_OV: float(st_.mu_OV), mu_QK: float(st_.mu_QK)}
    H = first_integral.first_integral("CACO").subs({**PAPER, eta_QK: 7, eta_OV: 1})
    assert abs(float(H.subs(point)) - float(H.subs({mu_OV: 0, mu_QK: 0}))) < 1e-9
    loss = reduction.reduced_loss().subs(PAPER)
    assert math.isclose(float(loss.subs(point)), 0.05, rel_tol=1e-10)


# -------------------------------------------------------------- asymptotics

def test_early_phase_inverse_and_ode():
    e = asymptotics.early_phase()
    tsym = sp.Symbol("t", nonnegative=True)
    vals = {**PAPER, eta_OV: 1.0}
    mu_t = e["mu_OV_of_t"].subs(vals)
    t_mu = e["t_of_mu_OV"].subs(vals)
    f = sp.lambdify(tsym, mu_t, [{"wright_omega": lambda z: mpmath.lambertw(mpmath.exp(z)).real}, "mpmath"])
    for tv in (1.0, 100.0, 1e4):
        assert math.isclose(float(t_mu.subs(mu_OV, f(tv))), tv, rel_tol=1e-10)
    # it solves the reduced ODE with alpha frozen at alpha_0
    d_ov = reduction.reduced_odes("CACO", in_alpha=True)[0].subs(sp.Symbol("alpha", positive=True), e["alpha_0"])
    assert sp.simplify(sp.diff(e["t_of_mu_OV"], mu_OV) * d_ov - 1) == 0


def test_late_time():
    late = asymptotics.late_time()
    assert late["one_minus_alpha_ratio_limit"] == 1
    assert sp.simplify(late["loss_times_t_limit"] - b * (M - 1) / eta_OV) == 0


def test_late_time_numerically_along_reduced_flow():
    """L(t) t -> (M-1) b / eta_OV along a numeric solution of the derived ODE."""
    values = {**PAPER, eta_QK: 10.0, eta_OV: 1.0}
    sol = solve_ivp(_rhs("CACO", values), (0, 1e9), [0, 0], method="LSODA", rtol=1e-10, atol=1e-12,
                    t_eval=[1e7, 1e9])
    loss = sp.lambdify((mu_OV, mu_QK), reduction.reduced_loss().subs(PAPER), "numpy")
    ratios = [loss(*y) * t / (19 * 50) for t, y in zip(sol.t, sol.y.T)]
    assert abs(ratios[-1] - 1) < abs(ratios[0] - 1) and abs(ratios[-1] - 1) < 0.1


# ----------------------------------------------------------------- catalog

def test_shipped_cache_is_fresh_and_matches_derivation():
    import json
    data = json.loads(STORE.shipped.read_text())
    assert data["key"] == STORE.key(), "run: python -m derivations.catalog --rebuild"
    fresh = derive_all()
    cached = records()
    assert sorted(fresh) == sorted(cached)
    for k in fresh:
        assert sp.srepr(fresh[k].expr) == sp.srepr(cached[k].expr), k
        assert sp.srepr(fresh[k].lhs) == sp.srepr(cached[k].lhs), k
        assert fresh[k].relation == cached[k].relation, k


def test_expressions_byte_identical_to_the_cache_before_issue_8():
    """The restructuring (vocabulary, Family.flow, derived mu maps) changed no
    derived expression: srepr equal to the cache shipped at 73ae624."""
    import json
    from pathlib import Path
    old = json.loads((Path(__file__).resolve().parents[2] / "data" / "derived_73ae624.json").read_text())["results"]
    new = results()
    assert sorted(old) == sorted(new)
    assert [k for k in old if sp.srepr(new[k]) != old[k]] == []


def test_no_import_cycle_between_derivation_modules():
    """Module-level *and* function-level imports: the derivations form a DAG,
    the layers import downwards (core <- symbolic <- engine <- tasks), and the
    paper's factorization needs only the paper's model (and the leaf modules)."""
    import ast
    from pathlib import Path
    pkg = Path(__file__).resolve().parents[3] / "derivations"
    graph = {}
    for path in pkg.rglob("*.py"):
        parts = path.relative_to(pkg.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = name.split(".") if path.stem == "__init__" else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                base = ".".join(package[:len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
                deps.add(module)
                if node.module is None:
                    deps.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("derivations."):
                deps.add(node.module)
        graph[name] = deps - {name}
    assert graph["derivations.tasks.paper.factorization"] <= {
        "derivations.tasks.paper.model", "derivations.symbolic.symbols", "derivations.core.vocabulary"}
    assert "derivations.tasks.paper.reduction" not in (graph["derivations.tasks.paper.model"]
                                                       | graph["derivations.tasks.paper.factorization"])
    for name, deps in graph.items():
        if name.startswith("derivations.core"):
            assert all(d.startswith("derivations.core") for d in deps), (name, deps)
        if name.startswith("derivations.symbolic"):
            assert all(d.startswith(("derivations.core", "derivations.symbolic")) for d in deps), (name, deps)
        assert not any(d.startswith("numerics") for d in deps) or name == "derivations.print_dynamics"
    graph = {k: {d for d in v if d in graph} for k, v in graph.items()}
    state = {}

    def visit(node, stack):
        state[node] = "active"
        for dep in graph.get(node, ()):
            assert state.get(dep) != "active", f"import cycle: {' -> '.join(stack + [dep])}"
            if dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"
    for node in graph:
        if node not in state:
            visit(node, [node])


def test_bad_parameterization():
    with pytest.raises(ValueError, match="parameterization must be one of"):
        check_parameterization("XYZW")


def test_family_mu_map_is_inverted_by_sympy_and_drives_the_flow():
    """Family.coordinates_of_mu inverts Family.mu (no hand inversion), and the
    mu flow in mu coordinates is what reduction dispatches for CACO."""
    from derivations.tasks.paper.model import theta_OV, theta_QK
    fam = family("CACO")
    inv = fam.coordinates_of_mu()
    assert inv == {theta_QK: b * mu_QK, theta_OV: sp.sqrt(b) * mu_OV}
    assert tuple(sp.simplify(e.subs(inv)) for e in fam.mu()) == (mu_OV, mu_QK)
    assert fam.mu_flow(in_mu=True) == reduction.reduced_odes("CACO", in_alpha=True)
    with pytest.raises(ValueError, match="only the collapsed family"):
        family("FACO").coordinates_of_mu()
    assert factorization.circuit_symbols("QK").magnitude == b * mu_QK
