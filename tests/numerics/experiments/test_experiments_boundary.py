"""``python -m numerics.experiments boundary``: records, reasons, one-line errors."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from numerics.experiments.__main__ import main

ROOT = Path(__file__).resolve().parents[3]


def _run(*argv):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "numerics.experiments", "boundary", *argv],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def test_records_per_parameterization_and_loss(capsys):
    assert main(["boundary", "--task", "query-in-context", "--target-loss", "0.1,0.5",
                 "--parameterizations", "CACO,FAFO", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    recs = out["records"]
    assert [(r["parameterization"], r["target_loss"]) for r in recs] == [
        ("CACO", 0.1), ("CACO", 0.5), ("FAFO", 0.1), ("FAFO", 0.5)]
    assert all(r["crossover_ratio"] is None and r["crossover_lambda"] is None for r in recs)
    # query-in-context: s = 1 copy of the query's token against m = 5 relevant of one type
    assert recs[0]["reason"].startswith("outside the window") and "s <= m/R" in recs[0]["reason"]
    assert recs[2]["reason"].startswith("no master curve")
    assert out["settings"]["shape"] == {"s": 1.0, "m": 5.0, "n": 50.0, "R": 1.0, "M": 20.0, "b": 50.0}


def test_tie_when_the_query_and_relevant_copies_are_equal(capsys):
    assert main(["boundary", "--task", "query-in-context", "--params", "m=1", "--json"]) == 0
    [rec] = json.loads(capsys.readouterr().out)["records"]
    assert rec["crossover_ratio"] is None and rec["reason"].startswith("tie at s = m")


@pytest.mark.parametrize("argv, word", [
    (["--target-loss", "9"], "--target-loss must be in (0, log M"),
    (["--task", "shared-irrelevant"], "not of the query-copies shape"),
    (["--params", "q=1"], "has no parameter 'q'"),
    (["--parameterizations", "XX"], "--parameterizations: unknown"),
    (["--ratio-range", "5,1"], "--ratio-range must be LO,HI"),
    (["--ratio-range", "1"], "--ratio-range must be LO,HI"),
    (["--ratio-range", "-1,10"], "--ratio-range must be LO,HI with 0 < LO < HI, both finite normal doubles (in "
                                 "[2.2250738585072014e-308, 1.7976931348623157e+308]); got '-1,10'"),
    # a subnormal LO (inside the window: the search ran from 9.99988867182683e-321, Lambda from 5.13e-321)
    (["--task", "query-copies", "--params", "s=3,R=5", "--ratio-range", "1e-320,1e-310"],
     "both finite normal doubles (in [2.2250738585072014e-308, 1.7976931348623157e+308]); got '1e-320,1e-310'"),
    (["--ratio-range", "1,inf"], "--ratio-range must be LO,HI with 0 < LO < HI"),
    (["--target-loss", "0.1,0.1"], "--target-loss names 0.1 twice"),
    # inside the window, a master curve searched to a Lambda its flow does not reach (a traceback, or minutes)
    (["--task", "query-copies", "--params", "s=4,R=2,m=6,b=1e-30"], "beyond the 1e+14 the master curve"),
    (["--task", "query-copies", "--params", "s=4,R=2,m=6", "--ratio-range", "1,1e308"], "up to inf"),
    # outside the window too, as numerics.dynamics.crossover.boundary refuses it (a traceback at work before)
    (["--task", "query-copies", "--params", "s=1,R=2,m=6,b=1e-8"], "beyond the 1e+14 the master curve"),
    (["--task", "query-copies", "--params", "s=4,R=2,m=6,b=1e100", "--ratio-range", "1e-300,1"],
     "--ratio-range from 1e-300: Lambda = ratio (M - 1) l(L)^2 / (M b) must be a finite number > 0"),
    # the master flow's own range of numbers (a traceback from the flow before)
    (["--task", "query-copies", "--params", "n=1e200"], "n must be a number in [0, 1e100]"),
    (["--task", "query-copies", "--params", "m=1e-300"], "the relevant share at the start, must be at least"),
])
def test_bad_input_is_one_line_and_exit_2(argv, word, capsys):
    try:
        code = main(["boundary", *argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and word in err


def test_bad_input_as_a_process_is_one_line_and_exit_2():
    proc = _run("--target-loss", "9")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--target-loss must be in (0, log M" in proc.stderr


def test_query_copies_inside_the_window(capsys):
    """s = 2 copies of the query's token against m = 5 relevant copies over R = 5 types: one
    Lambda* for both losses, r* = Lambda* M b / ((M - 1) l(L)^2)."""
    import math
    assert main(["boundary", "--task", "query-copies", "--params", "s=2,R=5,m=5,n=10,M=4,b=2",
                 "--target-loss", "0.2,0.5", "--json"]) == 0
    recs = json.loads(capsys.readouterr().out)["records"]
    assert all(r["reason"] is None for r in recs)
    assert recs[0]["crossover_lambda"] == recs[1]["crossover_lambda"]
    for r in recs:
        ell = math.log(3 / math.expm1(r["target_loss"]))
        assert r["crossover_ratio"] == pytest.approx(r["crossover_lambda"] * 4 * 2 / (3 * ell ** 2), rel=1e-12, abs=0)


def test_a_task_file_gives_the_built_in_task_answer(tmp_path, capsys):
    """The query-copies task written as a TOML file answers as the built-in task."""
    path = tmp_path / "qc.toml"
    path.write_text('name = "qc-file"\ndescription = "query-copies as a file"\nquery = "q"\n'
                    'query_in_context = true\nrelevant = ["r"]\n[parameters]\ns = 2\nR = 5\n'
                    '[[groups]]\nname = "q"\nper_class = true\nmultiplicity = "s - 1"\n'
                    '[[groups]]\nname = "r"\nper_class = true\ntypes = "R"\nmultiplicity = "m / R"\n'
                    '[[groups]]\nname = "z"\nper_class = false\nembedded = false\nmultiplicity = "n"\n')
    answers = []
    for task, params in ((str(path), "M=4,b=2,m=5,n=10"), ("query-copies", "M=4,b=2,m=5,n=10,s=2,R=5")):
        assert main(["boundary", "--task", task, "--params", params, "--target-loss", "0.2", "--json"]) == 0
        answers.append(json.loads(capsys.readouterr().out)["records"])
    assert answers[0] == answers[1] and answers[0][0]["crossover_ratio"] > 0


# ---------------------------------------------------------------- the authors' task: the expected-count flow

def test_the_authors_task_searches_the_flow_of_its_start(capsys):
    """--task authors (default --init authors): records per (parameterization, seed, loss), the ones
    of numerics.experiments.flow_crossover.flow_boundary."""
    from numerics.experiments.flow_crossover import RECORD_FIELDS, flow_boundary
    assert main(["boundary", "--task", "authors", "--target-loss", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["init"] == "authors" and out["settings"]["seeds"] == [1234]
    [rec] = out["records"]
    assert list(rec) == list(RECORD_FIELDS) and rec["reason"] is None
    assert rec == flow_boundary(["CACO"], [0.5])[0]
    assert main(["boundary", "--task", "authors", "--target-loss", "0.5"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["P", "seed", "loss"] and table[1].split()[:2] == ["CACO", "1234"]


def test_the_flow_search_shows_its_progress(monkeypatch, capsys):
    """Up to 10000 seeds of searches, minutes each: a progress bar (on a terminal, not with --quiet) counts
    the (parameterization, seed) searched, as predict's counts its flows."""
    from numerics.experiments import theory
    from numerics.experiments.commands import boundary as command

    def flow(st, P, r, targets, **k):
        return {"records": [{"target_loss": t, "reached": True, "self_attention": 0.5 + math.log(r) / 100,
                             "relevant_attention": 0.5} for t in targets]}
    monkeypatch.setattr(theory, "flow_to_losses", flow)
    bars = []

    def shown(total, **options):
        bars.append({"total": total, "show": options["show"], "updates": 0})

        class Bar:
            def update(self, n=1):
                bars[-1]["updates"] += n

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False
        return Bar()
    monkeypatch.setattr(command, "progress_bar", shown)
    argv = ["boundary", "--task", "authors", "--seeds", "3", "--parameterizations", "CACO,FAFO", "--target-loss",
            "0.5"]
    assert main(argv) == 0 and main([*argv, "--quiet"]) == 0
    assert bars == [{"total": 6, "show": True, "updates": 6}, {"total": 6, "show": False, "updates": 6}]


@pytest.mark.parametrize("argv, word", [
    (["--task", "authors", "--init", "zero"], "not of the query-copies shape"),
    (["--task", "authors", "--ratio-range", "1e-5,1"], "--ratio-range must be in [0.001, 50]"),
    (["--task", "authors", "--ratio-range", "2,1"], "--ratio-range must be LO,HI"),
    (["--task", "authors", "--init", "identity", "--target-loss", "4"], "--target-loss must be below the initial loss"),
    (["--task", "authors", "--init", "uniform", "--init-scale", "1e-3"], "--init-scale has no effect"),
    (["--task", "authors", "--init", "identity", "--init-scale", "2"], "--init-scale must be in"),
    (["--task", "authors", "--seeds", "0"], "--seeds must be an integer in [1, 10000]"),
    (["--task", "authors", "--params", "m=3"], "has no parameter 'm'"),
    (["--task", "authors", "--parameterizations", "CACO,XX"], "--parameterizations: unknown"),
    (["--seeds", "2"], "--seeds: only with --init authors, identity or uniform"),
    (["--init-scale", "1e-3"], "--init-scale: only with --init authors, identity or uniform"),
])
def test_flow_bad_input_is_one_line_and_exit_2_before_any_flow(argv, word, monkeypatch, capsys):
    from numerics.experiments import theory
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow ran"))
    assert main(["boundary", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and word in err, err



def test_flow_search_of_a_task_without_an_integer_length_takes_seq_len(monkeypatch, capsys):
    """query-copies with n = 10.5 irrelevant tokens has no integer length of its own:
    --seq-len gives it one, as predict's does (boundary had no such option, and its error said
    "give seq_len"); without it, one line naming --seq-len."""
    from numerics.experiments import theory
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow ran"))
    task = ["--task", "query-copies", "--params", "s=2,R=2,m=5,n=10.5,M=4,b=2", "--init", "identity"]
    assert main(["boundary", *task, "--target-loss", "0.5"]) == 2
    assert "--seq-len is required" in capsys.readouterr().err
    assert main(["boundary", *task, "--seq-len", "2", "--target-loss", "0.5"]) == 2
    assert "--seq-len must be an integer" in capsys.readouterr().err
    assert main(["boundary", "--task", "query-copies", "--seq-len", "20"]) == 2
    assert "--seq-len: only with --init" in capsys.readouterr().err
    monkeypatch.undo()
    assert main(["boundary", *task, "--seq-len", "20", "--target-loss", "0.5", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["settings"]["seq_len"] == 20 and len(payload["records"]) == 1


def _derived(unknown, **values):
    """The one of Lambda, r, b that ``unknown`` names, solved from the derivation's
    r = Lambda M b / ((M - 1) l(L)^2) (:func:`derivations.tasks.crossover.ratio_of_lambda`) at ``values``,
    evaluated at 40 digits."""
    import sympy as sp
    from derivations.tasks.crossover import ratio_of_lambda
    sym = {name: sp.Symbol(name, positive=True) for name in ("Lambda", "r", "b")}
    num = {name: sp.Float(v, 60) for name, v in values.items()}
    rule = sp.Eq(ratio_of_lambda(num.get("Lambda", sym["Lambda"]), num["loss"], num["M"], num.get("b", sym["b"])),
                 num.get("r", sym["r"]))
    (root,) = sp.solve(rule, sym[unknown])
    return float(root.evalf(40))


def test_a_lambda_just_beyond_the_master_flows_range_is_shown_beyond_it(capsys):
    """--ratio-range up to 3.9258e13 gives Lambda 1.00008e14 at loss 0.2, just beyond the 1e14 searched: the
    line said 'Lambda ... up to 1e+14 ..., beyond the 1e+14' (three digits); it shows the Lambda at 15 digits,
    here against Lambda solved from the derivation's r(Lambda) (derivations.tasks.crossover) at 40 digits."""
    assert main(["boundary", "--task", "query-copies", "--params", "s=2,R=5,m=5,n=10,M=4,b=2", "--target-loss",
                 "0.2", "--ratio-range", "1,39258000000000.5", "--quiet"]) == 2
    err = capsys.readouterr().err
    shown = float(err.split("(M b) up to ")[1].split()[0])
    want = _derived("Lambda", r=39258000000000.5, loss=0.2, M=4, b=2)
    assert err.count("\n") == 1 and 1e14 < shown == pytest.approx(want, rel=1e-11), err


def _query_in_context_with_b(tmp_path, name, b):
    """A task file: the built-in query-in-context renamed ``name``, its default b set to ``b`` (text)."""
    source = ROOT / "derivations" / "tasks" / "files" / "query-in-context.toml"
    file = tmp_path / f"{name}.toml"
    text = source.read_text().replace('name = "query-in-context"', f'name = "{name}"')
    file.write_text(text + f"\n[defaults]\nb = {b}\n")
    return file


def test_a_lambda_beyond_the_range_names_where_b_comes_from_and_its_least_value(tmp_path, capsys):
    """b = 1e-300 puts Lambda beyond 1e14 at the default --ratio-range (up to 1e6): the line names --params b
    or the file's defaults.b and the least b that range allows, which is then accepted (it named neither); that
    b is the one at which the derivation's r(Lambda) is the range's top 1e6 at Lambda = 1e14 and the default
    target loss 0.1 (solved at 40 digits)."""
    file = _query_in_context_with_b(tmp_path, "qb", "1e-300")
    for task, says in ((["--params", "b=1e-300"], "(M = 20, b = 1e-300, set by --params b)"),
                       (["--task", str(file)], "(M = 20, b = 1e-300, set by defaults.b)")):
        assert main(["boundary", *task, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
        least = err.rstrip().rpartition("give a lower HI or b >= ")[2]
        assert float(least) == pytest.approx(_derived("b", r=1e6, Lambda=1e14, loss=0.1, M=20), rel=1e-12), err
    assert main(["boundary", "--params", f"b={least}", "--quiet", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["records"]) == 1


def test_a_lambda_beyond_double_precision_at_lo_names_where_b_comes_from(tmp_path, capsys):
    """A Lambda beyond double precision at the low end of --ratio-range (b = 1e-320 with the default range; a
    task file's default b must be a normal double, so there b = 1.23456789e-10 with a range from 1e300): the
    line names --params b or the file's defaults.b, and b as given, not at 6 digits (9.99989e-321,
    1.23457e-10); it named neither."""
    file = _query_in_context_with_b(tmp_path, "qb-far", "1.23456789e-10")
    for task, says in ((["--params", "b=1e-320"], "; M = 20, b = 1e-320, set by --params b\n"),
                       (["--task", str(file), "--ratio-range", "1e300,1e301"],
                        "; M = 20, b = 1.23456789e-10, set by defaults.b\n")):
        assert main(["boundary", *task, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("experiments: error: --ratio-range from "), err
        assert "Lambda = ratio (M - 1) l(L)^2 / (M b) must be a finite number" in err and err.endswith(says), err
