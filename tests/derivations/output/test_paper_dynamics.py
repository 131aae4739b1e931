"""derivations/output/paper_dynamics.py: the paper's output of print_dynamics, its printed texts served
from the printed-results cache only when that cache is fresh, and then without SymPy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from derivations import catalog
from derivations.core.expression_cache import FORMAT, results_digest
from derivations.print_dynamics import main

ROOT = Path(__file__).resolve().parents[3]

#: What the paper's output without --params, rates or --loss never loads: SymPy and the task engine.
_SYMBOLIC = ("sympy", "derivations.tasks", "derivations.engine.task")


def test_the_paper_from_a_warm_printed_cache_imports_no_sympy(tmp_path):
    """Issue 24: the default output (and every format, --task paper, one parameterization) prints the
    printed-results cache's texts as they are: no task built and no SymPy imported, about a third of a
    second of the cold start. The first process warms the (isolated) user cache where the shipped file
    is stale; the second reads a warm cache."""
    argvs = [[], ["--format", "json"], ["--task", "paper", "--format", "latex", "--parameterization", "FAFO"],
             ["--format", "text", "--parameterization", "CACO"]]
    code = ("import io, contextlib, sys\nfrom derivations.print_dynamics import main\n"
            f"for argv in {argvs!r}:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert main(argv) == 0, argv\n"
            f"print(sorted(m for m in {_SYMBOLIC!r} if m in sys.modules))")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path))
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert warm.returncode == 0, warm
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert (out.returncode, out.stdout.strip(), out.stderr) == (0, "[]", ""), out


@pytest.mark.parametrize("damage", ["an entry edited", "another key"])
def test_an_edited_or_stale_printed_cache_is_not_printed(damage, tmp_path, monkeypatch, capsys):
    """A printed text is printed as it is only from a file whose key is the sources' and whose digest is
    its texts': an entry edited in place (the digest kept is the unedited texts') or a well-formed file of
    other sources (another key, its own digest) is derived again, and what the expressions print is shown,
    never the file's text."""
    argv = ["--format", "text", "--parameterization", "CACO"]
    assert main(argv) == 0
    expected = capsys.readouterr().out
    store = catalog.PRINTED
    complete = store.load()
    edited = json.loads(json.dumps(complete))
    edited["text"]["CACO.dmu_OV_dt_alpha"] = "FORGED"
    key = store.key()
    digest, file_key = ((results_digest(complete), key) if damage == "an entry edited"
                        else (results_digest(edited), "0" * 64))
    monkeypatch.setattr(store, "shipped", tmp_path / "printed.json")
    monkeypatch.setattr(store, "user_path", lambda k: tmp_path / f"printed-{k}.json")
    monkeypatch.setattr(store, "memo", None)
    calls = []
    monkeypatch.setattr(store, "derive", lambda: calls.append(1) or complete)
    text = json.dumps({"digest": digest, "format": FORMAT, "key": file_key, "results": edited})
    store.shipped.write_text(text)
    store.user_path(key).write_text(text)
    assert main(argv) == 0
    assert capsys.readouterr() == (expected, "") and calls == [1]
    assert "FORGED" not in store.user_path(key).read_text()      # rewritten from the derivation
