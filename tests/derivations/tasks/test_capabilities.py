"""The paper's closed forms as capabilities: native for the paper, inherited by mapped tasks,
refused with a reason otherwise (derivations.tasks.closed_forms)."""
import random

import pytest
import sympy as sp

from derivations.engine import reduce_task
from derivations.engine.task import n_c
from derivations.symbolic import alpha, eta_QK, mu_OV, mu_QK, r
from derivations.task_catalog import task_reduction
from derivations.engine import Task
from derivations.tasks import CAPABILITIES, CapabilityUnavailable, capabilities, capability, get_task
from derivations.tasks.paper import first_integral, reduction, sharpness


def _equal_at_random_points(a, b, trials=3):
    rng = random.Random(3)
    free = sorted((a.free_symbols | b.free_symbols) if hasattr(a, "free_symbols") else set(), key=str)
    for _ in range(trials):
        point = {s: sp.Rational(rng.randint(11, 40), 10) for s in free}
        point.update({s: 20 for s in free if str(s) == "M"})
        assert abs(sp.N((a - b).subs(point), 30)) < 1e-20


def test_the_paper_has_every_capability_in_caco():
    got = capabilities("paper")
    assert got.pop("unbalanced_rates").startswith("collapsed circuits have no factors")
    assert got == {name: None for name in CAPABILITIES if name != "unbalanced_rates"}
    odes = capability("paper", "reduced_odes")
    assert (odes["dmu_OV_dt"], odes["dmu_QK_dt"]) == reduction.reduced_odes("CACO", in_alpha=True)
    assert capability("paper", "orbit")["orbit"] == first_integral.orbit("CACO")
    assert capability("paper", "state_at_loss")["state_equation"] == sharpness.state_equation()
    signs = capability("paper", "sharpness_signs")
    assert {k: int(v) for k, v in signs.items()} == {k: s for k, (_, s) in sharpness.sharpness_signs().items()}


def test_published_equations_are_the_derived_ones():
    pub = capability("paper", "published_equations")
    derived = capability("paper", "reduced_odes")
    a = reduction.alpha_expr()
    assert sp.simplify(pub["alpha"] - a) == 0
    for key in ("dmu_OV_dt", "dmu_QK_dt"):
        assert sp.simplify(pub[key] - derived[key].subs(alpha, a)) == 0


@pytest.mark.parametrize("parameterization", ["CACO", "CAFO"])
def test_a_mapped_task_inherits_the_paper_closed_forms_at_the_mapped_rates(parameterization):
    """shared-irrelevant maps onto the paper with eta_QK -> eta_QK (n_c+1)/n_c: its inherited
    reduced ODEs are the engine's own, and so is its orbit."""
    red = task_reduction("shared-irrelevant", parameterization)
    assert red.mapping == {eta_QK: eta_QK * (n_c + 1) / n_c}
    odes = capability("shared-irrelevant", "reduced_odes", parameterization)
    assert sp.simplify(odes["dmu_OV_dt"] - red.odes_alpha[mu_OV]) == 0
    assert sp.simplify(odes["dmu_QK_dt"] - red.odes_alpha[mu_QK]) == 0
    _equal_at_random_points(capability("shared-irrelevant", "orbit", parameterization)["orbit"], red.orbit)
    slope = capability("shared-irrelevant", "line_coordinates", parameterization)["slope"]
    paper_slope = capability("paper", "line_coordinates", parameterization)["slope"]
    assert sp.simplify(slope - paper_slope * (n_c + 1) / n_c) == 0


def test_the_state_at_a_loss_of_a_mapped_task_uses_the_mapped_ratio():
    paper = capability("paper", "state_at_loss")["state_equation"]
    mine = capability("shared-irrelevant", "state_at_loss")["state_equation"]
    assert sp.simplify(mine - paper.subs(r, r * (n_c + 1) / n_c)) == 0


def test_unbalanced_rates_of_a_factorized_parameterization():
    got = capability("paper", "unbalanced_rates", "FAFO")
    assert set(got) == {"dmu_OV_dt", "dmu_QK_dt", "effective_rate_QK", "effective_rate_OV",
                        "conserved_QK", "conserved_OV"}
    assert {str(s) for s in got["effective_rate_QK"].free_symbols} >= {"C_QK", "eta_Q", "eta_K"}


@pytest.mark.parametrize("task, name, parameterization, reason", [
    ("query-in-context", "orbit", "CACO", "does not map it onto the paper's equations"),
    ("query-in-context", "reduced_odes", "CACO", "no first integral"),
    ("shared-irrelevant", "orbit", "FACO", "reaches coordinates the paper's does not"),
    ("paper", "state_at_loss", "CAFO", "derived for CACO from zero initialization only"),
    ("paper", "unbalanced_rates", "CACO", "collapsed circuits have no factors"),
    ("paper", "published_equations", "FAFO", "published the collapsed"),
])
def test_a_task_without_a_capability_says_why(task, name, parameterization, reason):
    with pytest.raises(CapabilityUnavailable, match=reason):
        capability(task, name, parameterization)
    assert reason in capabilities(task, parameterization)[name]
    assert issubclass(CapabilityUnavailable, ValueError)


def test_bad_names():
    with pytest.raises(ValueError, match="unknown capability 'nope'; known: published_equations"):
        capability("paper", "nope")
    with pytest.raises(ValueError, match="parameterization"):
        capability("paper", "orbit", "XXXX")
    with pytest.raises(ValueError, match="unknown task"):
        capability("nope", "orbit")


def test_a_user_built_copy_of_the_paper_inherits_without_rescaling():
    paper = get_task("paper")
    mine = Task(name="my-paper", description="the paper, renamed", groups=paper.groups, query="q")
    assert reduce_task(mine).mapping == {}
    assert capability(mine, "orbit") == capability("paper", "orbit")
