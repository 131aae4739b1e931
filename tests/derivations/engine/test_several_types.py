"""Per-class groups of several exchangeable types (issue 26 item 3): the symmetry permutes each class's
types, so the family and its observables do not grow with R (R symbolic or a number)."""
import pytest
import sympy as sp

from derivations.engine.explicit import invariance_residual
from derivations.engine.reduce import reduce_task
from derivations.engine.task import Task, TokenGroup
from derivations.tasks import get_task
from _orbits import assert_orbits_are_patterns


def _with_types(R):
    """query-copies with a fixed number R of relevant types (a number, not the parameter)."""
    return Task("qc-fixed", "", (TokenGroup("q", per_class=True, multiplicity="s - 1"),
                                 TokenGroup("r", per_class=True, types=R, multiplicity=f"m / {R}"),
                                 TokenGroup("z", per_class=False, embedded=False, multiplicity="n")),
                query="q", query_in_context=True, parameters=("s",), defaults={"s": 1})


def test_orbits_by_generators_equal_equality_patterns_with_several_types():
    task = get_task("query-copies")
    assert_orbits_are_patterns(task, "r", task.symbols()["R"])


def test_two_groups_of_several_types_are_permuted_apart():
    """Two shared groups and two per-class groups of several types: each group's types are permuted on
    their own, so the orbits (from the generators) are the equality patterns with each group's labels
    renumbered apart (types 0 of two groups are not one label)."""
    task = Task("two-by-two", "", (TokenGroup("q", per_class=True, multiplicity=0),
                                   TokenGroup("r", per_class=True, types="R1", multiplicity="m / R1"),
                                   TokenGroup("s", per_class=True, types="R2", multiplicity="m / R2"),
                                   TokenGroup("u", per_class=False, types="U1", multiplicity="n / U1"),
                                   TokenGroup("v", per_class=False, types="U2", multiplicity="n / U2")),
                query="q", parameters=("R1", "R2", "U1", "U2"), defaults=dict.fromkeys(("R1", "R2", "U1", "U2"), 2))
    table = task.symbols()
    assert_orbits_are_patterns(task, ("r", "s", "u", "v"), tuple(table[k] for k in ("R1", "R2", "U1", "U2")), Mv=2)


def test_observables_do_not_grow_with_the_number_of_types():
    symbolic = reduce_task("query-copies", "CACO")
    assert [str(k) for k in symbolic.observables] == ["mu_QK_q", "mu_QK", "mu_OV_q", "mu_OV"]
    qic = reduce_task("query-in-context", "CACO")
    R, s = (get_task("query-copies").symbols()[k] for k in ("R", "s"))
    for k, v in symbolic.odes.items():
        assert sp.simplify(v.subs({R: 1, s: 1}) - qic.odes[k]) == 0


@pytest.mark.slow
def test_a_fixed_number_of_types_gives_the_symbolic_reduction_at_that_number():
    symbolic = reduce_task("query-copies", "CACO")
    R = get_task("query-copies").symbols()["R"]
    for R_value in (2, 7):
        fixed = reduce_task(_with_types(R_value), "CACO")
        assert list(fixed.observables) == list(symbolic.observables)
        assert len(fixed.coordinates) == len(symbolic.coordinates)
        for k, v in fixed.odes.items():
            assert sp.simplify(v - symbolic.odes[k].subs(R, R_value)) == 0


@pytest.mark.slow
@pytest.mark.parametrize("param", ["CACO", "FAFO"])
def test_several_types_reduction_is_exact_on_an_explicit_instance(param):
    assert invariance_residual("query-copies", param, 2, {"r": 2}, exact=False) == []


@pytest.mark.parametrize("parameterization, circuit", [("FACO", "QK"), ("CAFO", "OV")])
def test_the_factorized_note_tells_new_coordinates_from_resized_orbits(parameterization, circuit):
    """query-copies (R relevant types per class, the query in its own context): its factorized circuit
    reaches the query's coordinates, which the paper's family has not, and has the relevant ones, which
    the paper's family has (same matrix and pattern name) but as orbits of M R entries, not M. The note said
    all of them were coordinates the paper's does not reach. The truth is read off the two families here."""
    from types import SimpleNamespace

    from derivations.core.vocabulary import CIRCUITS
    from derivations.engine.reduce import _unlike_paper
    from derivations.task_catalog import STORE, _coordinates
    entries = STORE.load()           # the cached reductions' coordinates and notes, decoded alone
    paper_coordinates = _coordinates(entries[f"paper/{parameterization}"])
    paper = {str(c.symbol): c.orbit for c in paper_coordinates}
    entry = entries[f"query-copies/{parameterization}"]
    coordinates, note = _coordinates(entry), entry["note"]
    mine = [c for c in coordinates if c.matrix in CIRCUITS[circuit].factors]
    new = sorted(str(c.symbol) for c in mine if str(c.symbol) not in paper)
    resized = sorted(f"{c.symbol}: {c.orbit} entries, the paper's {paper[str(c.symbol)]}" for c in mine
                     if str(c.symbol) in paper and c.orbit != paper[str(c.symbol)])
    assert new and resized and all("q_" in name for name in new) and all("_r" in s or "r_" in s for s in resized)
    assert (f"the factorized {circuit} circuit reaches coordinates the paper's does not ({', '.join(new)}), so its "
            "observables share factors and no single effective rate exists; its coordinates the paper's has are "
            f"orbits of other sizes ({'; '.join(resized)})") in note
    # without the query's coordinates (R relevant types only: the family of the paper with types = "R"), the
    # coordinates are the paper's: the note claims no new coordinate and no shared factor
    only_r = [c for c in coordinates if str(c.symbol) not in new]
    assert _unlike_paper(circuit, only_r, SimpleNamespace(coordinates=paper_coordinates)) == (
        f"the factorized {circuit} circuit has the paper's coordinates, but as orbits of other sizes "
        f"({'; '.join(resized)}), so the paper's effective rate is not derived for it")
