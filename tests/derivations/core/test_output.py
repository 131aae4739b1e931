"""The output directory check (derivations.core.output.prepare_output_dir): the probe's name is as long as
asked, the directories made for a refused probe are removed, a blank path names no directory."""
import errno
import os

import pytest

from derivations.core import output


def test_the_probe_name_is_as_long_as_asked(tmp_path):
    """A name of the file system's longest (NAME_MAX, from pathconf) is written; one byte more is refused."""
    longest = os.pathconf(tmp_path, "PC_NAME_MAX")
    assert output.prepare_output_dir(tmp_path, longest_name=longest) == tmp_path
    with pytest.raises(ValueError, match="cannot take files: File name too long"):
        output.prepare_output_dir(tmp_path, longest_name=longest + 1)
    assert os.listdir(tmp_path) == []


def test_the_directories_made_for_a_refused_probe_are_removed(tmp_path, monkeypatch):
    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(output.os, "write", full)
    with pytest.raises(ValueError, match="cannot take files: No space left on device"):
        output.prepare_output_dir(tmp_path / "a" / "b" / "c")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("blank", ["", " ", "\t\n"])
def test_a_blank_path_names_no_directory_and_nothing_is_made(blank, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="^--output must name a directory; got "):
        output.prepare_output_dir(blank)
    assert os.listdir(tmp_path) == []
