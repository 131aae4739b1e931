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


def _with_stderr(stderr: str, *argv):
    """Run ``argv`` with stderr closed at start (``2>&-``) or on a full device (``2>/dev/full``)."""
    import subprocess
    redirect = "2>&-" if stderr == "closed" else "2>/dev/full"
    return subprocess.run(["sh", "-c", f'exec "$@" {redirect}', "sh", *argv], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("stderr", ["closed", "full"])
def test_a_line_stderr_cannot_take_is_lost_alone(stderr):
    """note's line on a stderr closed at start or on a full disk is lost, and only it: it does not go to stdout
    (print(file=None) writes there), raise, or make the interpreter's failed final flush the exit status (120)."""
    import sys
    code = "from derivations.core.output import note; note('a warning'); print('the output')"
    out = _with_stderr(stderr, sys.executable, "-c", code)
    assert (out.returncode, out.stdout) == (0, "the output\n")


@pytest.mark.parametrize("stderr", ["closed", "full"])
def test_bad_input_is_exit_2_whatever_stderr_is(stderr):
    """Bad input is exit status 2 with nothing on stdout, also where its one line cannot be written."""
    import sys
    out = _with_stderr(stderr, sys.executable, "-m", "derivations.print_dynamics", "--ratio", "0")
    assert (out.returncode, out.stdout) == (2, "")
