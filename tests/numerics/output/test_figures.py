"""Tests for numerics.output.figures (API, CLI, argument errors) and its command, numerics.figures."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from numerics import output  # noqa: E402
from numerics.output import figures  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_files(paths, names, formats):
    expected = {f"{n}.{f}" for n in names for f in formats}
    assert {p.name for p in paths} == expected
    for p in paths:
        data = p.read_bytes()
        assert len(data) > 1000, p
        if p.suffix == ".png":
            assert data.startswith(PNG_MAGIC), p
        elif p.suffix == ".pdf":
            assert data.startswith(b"%PDF"), p


@pytest.fixture(scope="module")
def quick_figures(tmp_path_factory):
    """Every figure as PNG (quick grids). The other formats are the same figures through
    another matplotlib backend: PNG, PDF and SVG of one figure in test_cli_in_process, PNG and
    PDF of every figure in the slow test_make_figures_writes_png_and_pdf."""
    out = tmp_path_factory.mktemp("figs")
    return out, figures.make_figures(out, ("png",), quick=True)


def test_make_figures_writes_every_figure(quick_figures):
    out, paths = quick_figures
    _check_files(paths, output.FIGURES, ("png",))
    assert all(p.parent == out for p in paths)


@pytest.mark.slow
def test_make_figures_writes_png_and_pdf(tmp_path):
    paths = figures.make_figures(tmp_path, quick=True)
    _check_files(paths, output.FIGURES, ("png", "pdf"))
    assert all(p.parent == tmp_path for p in paths)


def test_png_size_is_paper_width(quick_figures):
    import matplotlib.image as mpimg

    _, paths = quick_figures
    for p in paths:
        if p.suffix == ".png":
            h, w = mpimg.imread(p).shape[:2]
            assert abs(w / output.DPI - output.WIDTH) < 0.2, (p.name, w)
            assert h < w


def test_cli_in_process(tmp_path, capsys):
    out = tmp_path / "new" / "dir"
    rc = figures.main(["--output", str(out), "--quick", "--only", "stopping_curves",
                       "--formats", "png,pdf,svg", "--dpi", "60"])
    assert rc == 0
    paths = sorted(out.iterdir())
    _check_files(paths, ("stopping_curves",), ("png", "pdf", "svg"))
    printed = capsys.readouterr().out.split()
    assert sorted(printed) == sorted(str(p) for p in paths)


def test_each_plot_function_returns_figure():
    from matplotlib.figure import Figure

    fig = output.plot_stopping_curves(quick=True, ratios=(1.0, 10.0))
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 3
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("kwargs, match", [
    (dict(formats=("png", "gif")), "format"),
    (dict(formats=()), "empty"),
    (dict(names=("nope",)), "figure"),
    (dict(dpi=0), "dpi"),
])
def test_make_figures_bad_arguments(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        figures.make_figures(tmp_path, **kwargs)


def test_make_figures_output_is_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        figures.make_figures(f)


@pytest.mark.parametrize("argv", [
    ["--formats", "png,jpg"],
    ["--only", "nope"],
    ["--dpi", "-1"],
    ["--dpi", "abc"],
    ["--bogus"],
    ["extra"],
])
def test_cli_bad_arguments_exit_2_one_line(tmp_path, capsys, argv):
    assert figures.main(["--output", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "error" in err
    assert not (tmp_path / "o").exists()


def test_cli_refuses_an_empty_format_item(tmp_path, capsys):
    """--formats png,,pdf ran; every list option refuses an empty item (the shared list parser)."""
    assert figures.main(["--output", str(tmp_path / "o"), "--formats", "png,,pdf"]) == 2
    assert capsys.readouterr().err == ("python -m numerics.figures: error: --formats must not have an empty "
                                       "item between commas; got 'png,,pdf'\n")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, message", [(["--only", "stopping_curves", "stopping_curves"],
                                              "--only names stopping_curves twice"),
                                             (["--formats", "png,png"], "--formats names png twice")])
def test_a_name_given_twice_is_refused_and_the_api_makes_it_once(argv, message, tmp_path, capsys, monkeypatch):
    """--only stopping_curves stopping_curves drew it twice and reported 4 files: the command line
    refuses a repeated item as every list option does; the API makes each figure once."""
    assert figures.main(["--output", str(tmp_path / "out"), "--quick", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not (tmp_path / "out").exists()
    assert figures._check_names(["stopping_curves", "stopping_curves"]) == ("stopping_curves",)


def test_cli_subprocess_bad_output(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    proc = subprocess.run([sys.executable, "-m", "numerics.figures", "--output", str(f)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "not a directory" in proc.stderr
    assert proc.stdout == ""


def _bad_outputs(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    ro = tmp_path / "readonly"
    ro.mkdir()
    ro.chmod(0o500)
    (tmp_path / "taken" / "stopping_curves.pdf").mkdir(parents=True)
    return {
        "a figure's name taken by a directory": (str(tmp_path / "taken"), "has a stopping_curves.pdf that is a directory"),
        "file": (str(f), "not a directory"),
        "under a file": (str(f / "sub" / "dir"), "which is a file"),
        "unwritable": (str(ro / "new"), "not writable"),
        "too long": (str(tmp_path / ("x" * 300)), "longer than"),
        "too long path": (str(tmp_path / "/".join(["y" * 200] * 25)), "exceed"),
        "empty": ("", "non-empty"),
        "blank": ("  ", "non-empty"),
    }


@pytest.mark.parametrize("case", ["file", "under a file", "unwritable", "too long",
                                  "too long path", "empty", "blank", "a figure's name taken by a directory"])
def test_cli_bad_output_paths(tmp_path, capsys, monkeypatch, case):
    """Regression: each of these gave a traceback, exit 1, partial output or wrote into
    the working directory. Now: one line on stderr, exit 2, nothing written, no work."""
    import os
    path, match = _bad_outputs(tmp_path)[case]
    if case == "unwritable" and os.access(tmp_path / "readonly", os.W_OK):
        # running as root, which may write anywhere: let the permission test say no
        real = os.access
        monkeypatch.setattr(os, "access",
                            lambda p, mode: False if "readonly" in str(p) else real(p, mode))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert figures.main(["--output", path, "--quick", "--only", "stopping_curves"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and match in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    with pytest.raises(ValueError, match=match):
        figures.make_figures(path, names=("stopping_curves",), quick=True)


@pytest.mark.parametrize("dpi", ["0", "5", "1e6", "nan", "inf"])
def test_cli_dpi_outside_range(tmp_path, capsys, dpi):
    assert figures.main(["--output", str(tmp_path / "o"), "--dpi", dpi]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--dpi must be in [10, 2400]" in err
    assert not (tmp_path / "o").exists()


def test_build_parser_documents_every_option():
    for action in figures.build_parser()._actions:
        assert action.help, action.option_strings


def test_output_dir_is_really_probed(capsys, monkeypatch):
    """A path the static checks pass but no file can be written to (under /proc, even as
    root) is refused by the real write of a temporary file: one line, exit 2, nothing left."""
    import os
    monkeypatch.setattr(os, "access", lambda p, mode: True)   # the static check says yes
    path = "/proc/qkov-figures/sub"
    assert figures.main(["--output", path, "--quick", "--only", "stopping_curves"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot take files" in err, err
    assert not Path(path).exists()


def test_one_save_figure(tmp_path):
    """numerics.figures and numerics.experiments.plots write through the one save_figure."""
    import matplotlib.pyplot as plt

    from numerics.experiments import plots
    from numerics.output import files
    assert output.save_figure is files.save_figure
    calls = []
    real = files.save_figure

    def spy(*args, **kw):
        calls.append(args[2])
        return real(*args, **kw)
    files.save_figure = spy
    try:
        fig = plt.figure()
        paths = plots.save_figure(fig, tmp_path / "new", "x")
    finally:
        files.save_figure = real
    assert calls == ["x"] and [p.name for p in paths] == ["x.png", "x.pdf"]
    assert plt.fignum_exists(fig.number)        # the caller's pyplot figure is left open (it is theirs)
    plt.close(fig)


def test_closed_pipe_and_full_disk(tmp_path):
    """The list of written files goes through the one output writer (the figure at the lowest dpi: its
    pixels are not what is tested here)."""
    import os
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "numerics.figures", "--output",
                               str(tmp_path), "--quick", "--only", "stopping_curves",
                               "--formats", "png", "--dpi", "10"], cwd=ROOT, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    # the error is the last line: no summary of the files after it
    assert proc.stderr.splitlines()[-1].startswith("python -m numerics.figures: error: cannot write the output")
    assert " files in " not in proc.stderr, proc.stderr
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "numerics.figures", "--output",
                               str(tmp_path), "--quick", "--only", "stopping_curves",
                               "--formats", "png", "--dpi", "10"], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("stop", [KeyboardInterrupt, lambda: OSError(28, "No space left on device")])
def test_a_run_stopped_before_any_figure_leaves_no_directory_it_made(stop, tmp_path, capsys, monkeypatch):
    """Ctrl-C (or a failed write) before the first figure is written: the directories the run made,
    which hold nothing, are removed again; a directory that was there is kept."""
    def interrupted(quick=False):
        raise stop()
    monkeypatch.setitem(figures.FIGURES, "stopping_curves", interrupted)
    argv = ["--output", str(tmp_path / "new" / "figs"), "--only", "stopping_curves", "--formats", "png"]
    assert figures.main(argv) == (130 if stop is KeyboardInterrupt else 1)
    assert capsys.readouterr().err.count("\n") == 1 and sorted(tmp_path.iterdir()) == []
    assert figures.main(["--output", str(tmp_path), *argv[2:]]) in (1, 130) and tmp_path.is_dir()


def test_notes_stderr_cannot_take_leave_the_figures_and_status(tmp_path, capsys, monkeypatch):
    """The timing notes on a stderr that cannot be written (a full disk) are lost alone: the figures are
    written, their list printed, exit 0 (the failed note was the command's failure)."""
    import io

    class Full(io.TextIOBase):
        def write(self, text):
            raise OSError(28, "No space left on device")
    monkeypatch.setattr(sys, "stderr", Full())
    argv = ["--output", str(tmp_path), "--quick", "--only", "stopping_curves", "--formats", "png", "--dpi", "10"]
    assert figures.main(argv) == 0
    assert capsys.readouterr().out == f"{tmp_path / 'stopping_curves.png'}\n"

@pytest.mark.parametrize("command", [["numerics.figures", "--quick"], ["numerics.experiments", "fig3", "--workers", "1"]],
                         ids=lambda c: c[0])
def test_a_matplotlib_that_refuses_to_load_is_one_line_before_any_work(command, tmp_path):
    """matplotlib installed but refusing to load (MPLBACKEND=bogus, read when it is imported): one line naming the
    reason, exit status 2, nothing written (it was matplotlib's traceback)."""
    import os
    env = dict(os.environ, MPLBACKEND="bogus", PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", *command, "--output", str(tmp_path / "out")], capture_output=True,
                         text=True, timeout=120, env=env)
    assert (run.returncode, run.stdout, run.stderr.count("\n")) == (2, "", 1), run.stderr
    assert "needs the optional dependency matplotlib, which cannot be loaded here: " in run.stderr
    assert "'bogus'" in run.stderr and "Traceback" not in run.stderr and list(tmp_path.iterdir()) == []


def test_cli_without_matplotlib_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    """A plain ``pip install`` has no matplotlib (the extra qkov[plot]): one line, exit status 2, nothing written."""
    from numerics.figures import main
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # (import matplotlib: ImportError)
    assert main(["--output", str(tmp_path / "figs"), "--quick", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "matplotlib" in err and "qkov[plot]" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_write_that_fails_names_the_file_not_its_temporary(tmp_path, capsys, monkeypatch):
    """A figure's atomic write whose rename fails is one line naming the figure's file (exit 1), not Python's
    text of the temporary's rename."""
    from numerics.output import files

    def fails(path, write, **kwargs):
        raise IsADirectoryError(21, "Is a directory", str(path.parent / f".{path.name}.x.tmp"), None, str(path))
    monkeypatch.setattr(files, "atomic_write", fails)
    assert figures.main(["--output", str(tmp_path), "--quick", "--only", "stopping_curves", "--formats", "pdf"]) == 1
    assert capsys.readouterr().err == (f"python -m numerics.figures: error: cannot write {tmp_path}/stopping_curves.pdf: "
                                       "Is a directory\n")
