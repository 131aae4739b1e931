"""The Task description: built-in tasks, concrete instances, bad input."""
import math
import re

import pytest
import sympy as sp

from derivations.engine import Task, TokenGroup, n_c, validate_parameter
from derivations.tasks import TASKS, get_task, symbolic_task_names
from derivations.symbolic import m, n


def test_registry():
    assert tuple(TASKS) == ("paper", "shared-irrelevant", "query-in-context",
                            "shared-irrelevant+query-in-context", "query-copies", "authors")
    assert symbolic_task_names() == tuple(TASKS)[:5]
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
        assert sum(row) == 55 + (1 if "query" in name else 0)      # whole counts: their sum in doubles is exact
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
    assert inst.score_scale == pytest.approx(1 / math.sqrt(50), rel=5e-16, abs=0)    # two roundings: an ulp
    for k in range(4):
        row = inst.counts[k]
        # 62 context tokens + the query; sums of at most 50 expected counts in doubles, each rounding at most
        # 1.1e-16 relative: within 1e-14
        assert sum(row) == pytest.approx(63, rel=1e-14, abs=0)
        rel = sum(c for c, f in zip(row, inst.relevant[k]) if f)
        assert rel == pytest.approx(62 * 5.5 / 15.5, rel=1e-14, abs=0)  # 35.5 % of the context
        assert row[inst.query[k]] == pytest.approx(5, rel=1e-15, abs=0)   # 62 / 15.5 + 1, a few roundings
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


def test_why_not_symbolic_is_check_symbolic_as_a_reason():
    """None for a task the engine reduces; else check_symbolic's message, word for word."""
    assert get_task("shared-irrelevant").why_not_symbolic() is None
    with pytest.raises(ValueError) as exc:
        get_task("authors").check_symbolic()
    assert get_task("authors").why_not_symbolic() == str(exc.value)


def test_initial_factors_paper_structure():
    inst = get_task("paper").instance(M=2, values={"m": 5, "n": 50, "b": 50})
    f = inst.initial_factors(0.1)
    assert f["W_Q"][0] == [0.1, 0.0] and f["W_K"][2] == [0.1, 0.0]
    assert f["W_O"] == [[0.05, -0.05], [-0.05, 0.05]]
    assert f["W_V"][0][2:] == [0.05, -0.05]


# ---------------------------------------------------------------- a Task is validated when it is built (issue 15, item 14)

def _groups(**relevant):
    return (TokenGroup("q", per_class=True), TokenGroup("r", per_class=True, multiplicity=m, **relevant),
            TokenGroup("z", per_class=False, multiplicity=n, embedded=False))


@pytest.mark.parametrize("kwargs, message", [
    ({"embedding_scale": 0}, "embedding_scale must be a finite expression > 0 for every value of the parameters; got 0"),
    ({"embedding_scale": -1}, "embedding_scale must be a finite expression > 0 .*got -1"),
    ({"embedding_scale": sp.oo}, "embedding_scale must be a finite expression > 0 .*got oo"),
    ({"score_scale": sp.nan}, "score_scale must be a finite expression > 0 .*got nan"),
    ({"embedding_scale": "b+"}, "embedding_scale must be .*not an expression"),
    ({"embedding_scale": sp.Symbol("k", positive=True)}, "embedding_scale uses unknown symbols k"),
    ({"relevant": ("q",)}, "the query group 'q' cannot be relevant"),
    ({"relevant": ("r", "r")}, "relevant groups must be distinct"),
    ({"relevant": ("nope",)}, "has no token group 'nope'"),
    ({"relevant": "r"}, "relevant must be a tuple"),
    ({"classes": 1}, r"classes must be the symbol M or an integer in \[2, 2\*\*53\]; got 1"),
    ({"classes": 2.5}, "classes must be the symbol M or an integer"),
    ({"classes": 2 ** 60}, "classes must be the symbol M or an integer"),
    ({"parameters": ("m",)}, "parameters: 'm' is taken"),
    ({"parameters": ("s",), "defaults": (("s", 0),)}, "s must be an integer >= 1"),
    ({"query_in_context": "yes"}, "query_in_context must be True or False"),
    ({"outputs": "tokens"}, "outputs must be 'classes' or 'vocabulary'"),
    ({"outputs": "vocabulary"}, "outputs='vocabulary' needs label"),
])
def test_a_task_is_checked_when_built(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Task("t", "", _groups(), query="q", **kwargs)


@pytest.mark.parametrize("description", ["colour \x1b[31mred", "a\x00b", "title \x1b]0;pwned\x07", "csi \x9b2J", 7])
def test_a_description_holds_no_control_characters(description):
    """A task file's description is printed as it is (print_dynamics, the LaTeX document): an escape sequence in
    it reached the terminal, which acts on it (colours, its title, the clipboard). Newlines and tabs stay."""
    with pytest.raises(ValueError, match=r"^task 't': description must be text without control characters"):
        Task("t", description, _groups(), query="q")
    assert Task("t", "two\nlines\tand a tab", _groups(), query="q").description == "two\nlines\tand a tab"


@pytest.mark.parametrize("names", [("s", "\uff53"), ("fi", "\ufb01")])      # fullwidth s; the ligature fi
def test_group_names_are_distinct_as_python_reads_identifiers(names):
    """Group names name the observables (mu_QK_<group>), and Python reads an identifier NFKC-normalized: two
    names it reads as one would make the numeric code of the reduced system a duplicate argument."""
    groups = _groups() + tuple(TokenGroup(x, per_class=True, multiplicity=1) for x in names)
    with pytest.raises(ValueError, match=r"group names must be distinct, also as Python reads identifiers"):
        Task("t", "", groups, query="q")


def test_a_relevant_group_without_copies_is_refused_in_every_parameterization():
    """Multiplicity 0 of the relevant group crashed the engine for FAFO: refused when built."""
    groups = (TokenGroup("q", per_class=True), TokenGroup("r", per_class=True, multiplicity=0),
              TokenGroup("z", per_class=False, multiplicity=n, embedded=False))
    with pytest.raises(ValueError, match="relevant group 'r' has no copies in its class's context"):
        Task("t", "", groups, query="q")


def test_groups_must_be_token_groups_and_symbols_known():
    with pytest.raises(ValueError, match="groups must be TokenGroup objects; got 'q'"):
        Task("t", "", ("q", TokenGroup("r", per_class=True, multiplicity=m)), query="q")
    with pytest.raises(ValueError, match="at least one token group"):
        Task("t", "", (), query="q")
    for name in ("", "a b", "two\nlines", "-x", "x/y", "x" * 65, 7):
        with pytest.raises(ValueError, match="task name must be a letter, then at most 63 letters"):
            Task(name, "", _groups(), query="q")
    assert Task("a+b.c_d-" + "e" * 56, "", _groups(), query="q").name.startswith("a+b.c_d-")
    # n_c is known only to a task that declares it
    shared = (*_groups()[:2], TokenGroup("u", per_class=False, multiplicity=n / n_c, types=n_c))
    with pytest.raises(ValueError, match="uses unknown symbols n_c"):
        Task("t", "", shared, query="q")
    assert Task("t", "", shared, query="q", parameters=("n_c",)).parameter_names() == ("n_c",)


@pytest.mark.parametrize("kwargs, message", [
    ({"multiplicity": "m+"}, "group 'r': multiplicity must be a finite expression >= 0; got 'm\\+', which is not"),
    ({"multiplicity": sp.nan}, "group 'r': multiplicity must be a finite expression >= 0 .*got nan"),
    ({"multiplicity": sp.oo}, "multiplicity must be a finite expression >= 0 .*got oo"),
    ({"multiplicity": sp.I}, "multiplicity must be a finite expression >= 0 .*got I"),
    ({"multiplicity": m - n}, "multiplicity must be a finite expression >= 0 for every value of the parameters; "
                              "got m - n"),
    ({"multiplicity": -1}, "multiplicity must be a finite expression >= 0"),
    ({"other_multiplicity": float("nan")}, "other_multiplicity must be a finite expression >= 0"),
    ({"per_class": "yes"}, "per_class must be True or False"),
    ({"types": 2.5}, "types must be a positive integer"),
])
def test_a_token_group_is_checked_when_built(kwargs, message):
    args = {"name": "r", "per_class": True, "multiplicity": m, **kwargs}
    with pytest.raises(ValueError, match=message):
        TokenGroup(**args)


@pytest.mark.parametrize("types", [0, -2, sp.Rational(5, 2), 2.5, sp.nan, sp.oo, m])
def test_shared_types_must_be_a_positive_integer(types):
    with pytest.raises(ValueError, match="group 'u': types must be a positive integer"):
        TokenGroup("u", per_class=False, multiplicity=1, types=types)


def test_text_uses_the_model_symbols():
    assert TokenGroup("r", per_class=True, multiplicity="m").multiplicity == m
    assert TokenGroup("u", per_class=False, multiplicity="n/n_c", types="n_c").types == n_c


# ---------------------------------------------------------------- parameter values (issue 15, item 12)

@pytest.mark.parametrize("name, value", [("M", 1e300), ("M", 1e23), ("n_c", 1e23), ("n_c", "1e300"),
                                         ("M", 2 ** 53 + 1), ("n_c", str(2 ** 53 + 1)), ("M", 1), ("n_c", 0),
                                         ("n_c", 2.5), ("M", "x"), ("M", float("inf")), ("n_c", True)])
def test_integer_parameters_are_exact_and_bounded(name, value):
    lo = 2 if name == "M" else 1
    with pytest.raises(ValueError, match=rf"^{name} must be an integer >= {lo} and <= 2\*\*53 = 9007199254740992; "
                                         rf"got {re.escape(repr(value))}$"):
        validate_parameter(name, value)


@pytest.mark.parametrize("name", ["n_c", "m", "g"])
@pytest.mark.parametrize("text", ["1_0", "\uff15", " 1_0 "])
def test_a_value_as_text_is_written_in_ascii_digits(name, text):
    """int() and float() read 1_0 and the full-width 5 (U+FF15); a task's parameter as text does not."""
    integer = name == "n_c"
    what = "an integer >= 1 and <= 2\\*\\*53 = 9007199254740992" if integer else "a finite number > 0"
    with pytest.raises(ValueError, match=rf"^{name} must be {what}; got {re.escape(repr(text))}$"):
        validate_parameter(name, text)


def test_integer_parameters_accept_integer_values():
    assert validate_parameter("M", 2 ** 53) == 2 ** 53
    assert validate_parameter("n_c", "7") == 7 and validate_parameter("M", 20.0) == 20
    assert validate_parameter("m", "2.5") == sp.Float(2.5) and validate_parameter("b", 50) == 50
    for value in (0, -1, "nan", float("inf"), "x", None, True):
        with pytest.raises(ValueError, match=rf"^m must be a finite number > 0; got {re.escape(repr(value))}$"):
            validate_parameter("m", value)


def test_instances_refuse_huge_integer_parameters():
    with pytest.raises(ValueError, match="n_c must be an integer >= 1 and <= 2"):
        get_task("shared-irrelevant").instance(M=3, values={"n_c": 1e23})
    with pytest.raises(ValueError, match="M must be an integer >= 2 and <= 2"):
        get_task("paper").instance(M=1e300)


def test_the_authors_task_is_read_from_the_authors_setting():
    """One definition: every count of the engine's authors' task is (SEQ_LEN - 2) w / TICKETS of
    derivations.core.authors_setting, and the description's numbers come from it too."""
    from derivations.core import authors_setting as S
    task = get_task("authors")
    context = S.SEQ_LEN - 2
    assert task.group("r0").multiplicity == sp.Rational(context, S.TICKETS)        # weight 0.1: 1 tenth
    assert task.group("r9").multiplicity == sp.Rational(context * 10, S.TICKETS)
    assert task.group("c").types == S.NUM_COMMON - len(S.QUERY_TOKENS) - len(S.LABEL_TOKENS)
    assert task.classes == S.NUM_CLASSES and task.score_scale ** 2 == sp.Rational(*S.SCORE_SCALE_SQUARED)
    assert len(task.relevant) == S.RELEVANT_PER_CLASS
    assert f"V = {S.VOCAB} one-hot tokens" in task.description and "0.4, 0.8, ..., 4 expected" in task.description
