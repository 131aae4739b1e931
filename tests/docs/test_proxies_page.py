"""The page "Interpretability proxies" (docs/proxies.md), "An engine task": the numbers it quotes are
those of the sweep command it gives (its output stored in tests/data/docs_sweeps/engine_qic, run again by
the slow test, about 15 s). The page's numbers from the README sweep are tests/docs/test_readme_sweep.py's."""
from __future__ import annotations

import math
import re
import shlex
from pathlib import Path

import pytest
from _stored_sweeps import assert_is_the_command, assert_run_again_is_stored, stored

DOCS = Path(__file__).resolve().parents[2] / "docs"
TEXT = " ".join((DOCS / "proxies.md").read_text(encoding="utf-8").split())


def _cell(trend):
    return f"{trend['low']:.3f} → {trend['high']:.3f}"


SECTION = TEXT.split("**An engine task.**", 1)[1]
COMMAND = shlex.split(re.search(r"`python -m numerics\.experiments (sweep [^`]*)`", SECTION).group(1))


def test_the_stored_sweep_is_the_pages_command():
    assert_is_the_command(stored("engine_qic")[1], COMMAND)


@pytest.mark.slow
def test_the_pages_command_writes_the_stored_sweep(tmp_path):
    assert_run_again_is_stored("engine_qic", COMMAND, tmp_path)


def test_the_engine_task_sweep_is_what_the_page_quotes():
    from numerics.experiments import proxies

    section = SECTION
    rows = stored("engine_qic")[0]
    trends = proxies.trends(rows, 0.5)
    caco, faco = trends["CACO"], trends["FACO"]
    assert {r[k] for r in rows for k in ("plausibility_auprc", "plausibility_token_f1")} == {"1.0"}
    entropy = re.search(r"at loss 0.5, CACO (\S+ → \S+), FACO (\S+ → \S+)\) at unchanged accuracy \(≥ ([\d.]+)\)",
                        section).groups()
    assert (_cell(caco["attention_entropy_normalized"]), _cell(faco["attention_entropy_normalized"])) == entropy[:2]
    assert min(float(r["accuracy"]) for r in rows if r["target_loss"] == "0.5") >= float(entropy[2])
    sufficiency = re.search(r"sufficiency gets worse \(CACO (\S+ → \S+), FACO (\S+ → \S+)\)", section).groups()
    assert (_cell(caco["sufficiency"]), _cell(faco["sufficiency"])) == sufficiency
    assert caco["sufficiency"]["verdict"] == faco["sufficiency"]["verdict"] == "worsens"
    [falls] = re.search(r"is flat \(CACO\) or falls \(FACO (\S+ → \S+)\)", section).groups()
    assert caco["comprehensiveness"]["verdict"] == "flat" and faco["comprehensiveness"]["verdict"] == "worsens"
    assert _cell(faco["comprehensiveness"]) == falls
    # the README's engine sweep is its CACO rows (a run's numbers do not depend on the runs stacked with it)
    readme = [r for r in rows if r["parameterization"] == "CACO"]
    positions, accuracy = re.search(r"its (\d+) rows carry every proxy, in range \((\d+) attended positions; at loss "
                                    r"0.5 the normalized entropy falls [^,]*, AUPRC and F1 stay 1.000, accuracy "
                                    r"(\S+ → \S+)\)", section).groups()[1:]
    assert f"{len(readme)} rows" in section
    assert {round(math.exp(float(r["attention_entropy"]) / float(r["attention_entropy_normalized"]))) for r in readme} \
        == {int(positions)}
    assert _cell(caco["accuracy"]) == accuracy
