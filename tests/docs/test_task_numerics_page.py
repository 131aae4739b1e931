"""The page "Tasks in numbers" (docs/task_numerics.md): its table of predicted relevant attention,
the numbers quoted beside it and the prediction columns of its SGD spot check are what
``numerics.experiments.predict.predict`` gives (the SGD column is the benchmark's measurement)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = (DOCS / "task_numerics.md").read_text(encoding="utf-8")
RATIOS = (1, 2, 5, 10, 20)
TABLE = re.findall(r"^\| (CACO|CAFO|FACO|FAFO) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                   PAGE, flags=re.M)
SPOT = re.findall(r"^\| (CACO|CAFO|FACO|FAFO) r = (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d ]+) \| ([\d ]+) \|$",
                  PAGE, flags=re.M)


@pytest.fixture(scope="module")
def predicted():
    """The page's command, `predict --init identity --target-loss 0.1 --ratios 1,2,5,10,20`."""
    from numerics.experiments.predict import predict
    recs = predict(["CACO", "CAFO", "FACO", "FAFO"], list(RATIOS), [0.1], seeds=1, init="identity")
    return {(r["parameterization"], r["ratio"]): r for r in recs}


def test_the_tables_have_rows():
    assert len(TABLE) == 4 and len(SPOT) == 7


def test_the_table_is_the_prediction(predicted):
    for P, *values in TABLE:
        for ratio, printed in zip(RATIOS, values):
            assert f"{predicted[P, ratio]['relevant_attention']:.3f}" == printed, (P, ratio)


def test_the_quoted_shares_are_the_prediction(predicted):
    """FAFO's relevant share is that of uniform scores, 22/63, up to ratio 10; CACO at ratio 20 puts
    0.75 of its attention on the query's own token."""
    assert "0.349 = 22/63" in PAGE and "(0.75 of it at r = 20)" in PAGE
    for ratio in (1, 2, 5, 10):
        assert predicted["FAFO", ratio]["relevant_attention"] == pytest.approx(22 / 63, abs=5e-4)
    assert f"{predicted['CACO', 20]['self_attention']:.2f}" == "0.75"


def test_the_spot_checks_prediction_columns_are_the_prediction(predicted):
    for P, ratio, _sgd, prediction, _sgd_steps, flow_steps in SPOT:
        rec = predicted[P, int(ratio)]
        assert f"{rec['relevant_attention']:.3f}" == prediction, (P, ratio)
        assert round(rec["steps"]) == int(flow_steps.replace(" ", "")), (P, ratio)
