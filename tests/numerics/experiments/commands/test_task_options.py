"""How the experiments' commands name a task in headers (task_label) and read --seq-len (seq_len_for)."""
import json

import pytest

from derivations.core.cli import UsageError
from numerics.experiments.commands.task_options import seq_len_for, task_label


def test_a_task_is_named_with_its_file_only_when_read_from_one(tmp_path):
    file = tmp_path / "q.toml"
    file.write_text("")
    text = json.dumps({"name": "query-copies-file"})
    assert task_label({"task": "paper", "task_params": [["m", 5.0], ["b", 0.5]]}, "paper") == "task paper, m=5, b=0.5"
    assert task_label({"task": "paper"}, None) == "task paper"
    assert task_label({"task": text, "task_params": [["M", 4.0]]}, str(file)) == f"task query-copies-file ({file}), M=4"
    assert task_label({}, None) == "the authors' task"


def test_seq_len_is_an_integer_of_three_at_least():
    assert seq_len_for(None, "3") == 3
    for text in ("2", "0", "-1", "3.5", "x"):
        with pytest.raises(UsageError, match="^--seq-len must be an integer"):
            seq_len_for(None, text)
