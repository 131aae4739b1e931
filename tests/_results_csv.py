"""Reading a sweep's ``results.csv`` back (for the tests; importable because pytest puts ``tests/`` on
``sys.path``, as for ``_stats``)."""
import csv

from numerics.experiments.proxies import PROXIES
from numerics.experiments.sweep import _number    # a cell as a finite float, None if empty or undefined


def read_csv(path) -> list:
    """Rows of a ``results.csv`` (numbers parsed, ``reached`` as bool)."""
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out.append({"parameterization": row["parameterization"], "ratio": float(row["ratio"]),
                        "seed": int(row["seed"]), "steps": int(row["steps"]),
                        "reached": row["reached"] == "True", "loss": _number(row["loss"]),
                        "relevant_attention": _number(row["relevant_attention"]),
                        "label_probability": _number(row["label_probability"]),
                        "accuracy": _number(row["accuracy"]), "status": row.get("status") or None,
                        "self_attention": _number(row.get("self_attention")),
                        "other_attention": _number(row.get("other_attention")),
                        "target_loss": _number(row.get("target_loss")),
                        **{k: _number(row.get(k)) for k in PROXIES}})
    return out
