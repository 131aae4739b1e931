"""Reading a sweep's ``results.csv`` back (for the tests; importable because pytest puts ``tests/`` on
``sys.path``, as for ``_stats``)."""
import csv

from numerics.experiments.proxies import PROXIES
from numerics.experiments.sweep import number_or_none


def read_csv(path) -> list:
    """Rows of a ``results.csv`` (numbers parsed, ``reached`` as bool)."""
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out.append({"parameterization": row["parameterization"], "ratio": float(row["ratio"]),
                        "seed": int(row["seed"]), "steps": int(row["steps"]),
                        "reached": row["reached"] == "True", "loss": number_or_none(row["loss"]),
                        "relevant_attention": number_or_none(row["relevant_attention"]),
                        "label_probability": number_or_none(row["label_probability"]),
                        "accuracy": number_or_none(row["accuracy"]), "status": row.get("status") or None,
                        "self_attention": number_or_none(row.get("self_attention")),
                        "other_attention": number_or_none(row.get("other_attention")),
                        "target_loss": number_or_none(row.get("target_loss")),
                        **{k: number_or_none(row.get(k)) for k in PROXIES}})
    return out
