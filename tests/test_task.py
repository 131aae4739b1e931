"""The Task description: built-in tasks, concrete instances, bad input."""
import math

import pytest
import sympy as sp

from derivations.task import (TASKS, Task, TokenGroup, get_task, n_c, symbolic_task_names,
                              task_names)
from derivations.symbols import m, n


def test_registry():
    assert task_names() == ("paper", "shared-irrelevant", "query-in-context",
                            "shared-irrelevant+query-in-context", "authors")
    assert symbolic_task_names() == task_names()[:4]
    with pytest.raises(ValueError, match="unknown task 'nope'; valid tasks: paper"):
        get_task("nope")


@pytest.mark.parametrize("name", ["paper", "shared-irrelevant", "query-in-context",
                                  "shared-irrelevant+query-in-context"])
def test_instance_counts_and_embeddings(name):
    task = get_task(name)
    values = {"m": 5, "n": 50, "b": 50, **({"n_c": 5} if "n_c" in task.parameters else {})}
    inst = task.instance(M=3, values=values)
    shared = "shared" in name
    assert inst.d == 6 + (5 if shared else 0)
    assert inst.n_out == 3 and inst.h_QK == inst.h_OV == 3 and inst.label == [0, 1, 2]
    for k in range(3):
        row = inst.counts[k]
        # m relevant + n irrelevant (+ the query itself)
        assert sum(row) == pytest.approx(55 + (1 if "query" in name else 0))
        assert row[inst.query[k]] == (1.0 if "query" in name else 0.0)
        rel = [t for t, flag in enumerate(inst.relevant[k]) if flag]
        assert len(rel) == 1 and row[rel[0]] == 5.0 and inst.token_names[rel[0]] == f"r_{k}"
    for t, e in enumerate(inst.embeddings):
        nonzero = [v for v in e if v]
        assert nonzero in ([], [1 / math.sqrt(50)])
        assert (nonzero == []) == inst.token_names[t].startswith("z_")


def test_authors_expected_counts():
    inst = get_task("authors").instance()
    assert inst.d == inst.n_out == 50 and inst.M == 4
    assert inst.score_scale == pytest.approx(1 / math.sqrt(50))
    for k in range(4):
        row = inst.counts[k]
        assert sum(row) == pytest.approx(63)          # 62 context tokens + the query
        rel = sum(c for c, f in zip(row, inst.relevant[k]) if f)
        assert rel == pytest.approx(62 * 5.5 / 15.5)  # 35.5 % of the context
        assert row[inst.query[k]] == pytest.approx(5)
        assert all(e[i] in (0.0, 1.0) for e in inst.embeddings for i in range(50))


def test_bad_input():
    with pytest.raises(ValueError, match="n_c must be an integer >= 1"):
        get_task("shared-irrelevant").instance(M=3, values={"n_c": 1.5})
    with pytest.raises(ValueError, match="M must be an integer >= 2"):
        get_task("paper").instance(M=1)
    with pytest.raises(ValueError, match="unknown parameter 'x'"):
        get_task("paper").instance(M=3, values={"x": 1})
    with pytest.raises(ValueError, match="fixed number of classes"):
        get_task("authors").instance(M=3)
    with pytest.raises(ValueError, match="must be per-class"):
        Task("t", "", (TokenGroup("q", per_class=False, types=2),), query="q")
    with pytest.raises(ValueError, match="must be embedded"):
        Task("t", "", (TokenGroup("q", per_class=True, embedded=False),
                       TokenGroup("r", per_class=True, multiplicity=m)), query="q")
    with pytest.raises(ValueError, match="other_multiplicity"):
        Task(
            "t", "", (TokenGroup("q", per_class=True), TokenGroup("r", per_class=True, multiplicity=m,
                                                                   other_multiplicity=1)),
            query="q").check_symbolic()
    with pytest.raises(ValueError, match="symbolic engine"):
        get_task("authors").check_symbolic()


def test_initial_factors_paper_structure():
    inst = get_task("paper").instance(M=2, values={"m": 5, "n": 50, "b": 50})
    f = inst.initial_factors(0.1)
    assert f["W_Q"][0] == [0.1, 0.0] and f["W_K"][2] == [0.1, 0.0]
    assert f["W_O"] == [[0.05, -0.05], [-0.05, 0.05]]
    assert f["W_V"][0][2:] == [0.05, -0.05]
