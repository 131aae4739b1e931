"""derivations/output/dynamics.py: the task list's formats (the renderer is tested through the
command, tests/derivations/test_task_cli.py)."""
from __future__ import annotations

import json

import pytest

from derivations.output import task_list


@pytest.mark.parametrize("fmt", ["anything", "JSON", None, ["json"]])
def test_an_unknown_format_is_refused_naming_the_formats(fmt):
    """Any other format silently printed the text list."""
    with pytest.raises(ValueError, match=r"^fmt must be one of pretty, text, latex, json; got "):
        task_list(fmt)


def test_every_format_lists_the_tasks():
    text = task_list("text")
    assert task_list("pretty") == task_list("latex") == text and text.startswith("paper")
    assert [t["name"] for t in json.loads(task_list("json"))][0] == "paper"
