"""Drawing no figures, or PNGs only, in tests about stored numbers (a PNG and a PDF take about a second each)."""


def skip_figures(monkeypatch):
    """Make the experiments' ``plots.save_figure`` write nothing (and return no paths)."""
    from numerics.experiments import plots
    monkeypatch.setattr(plots, "save_figure", lambda fig, directory, name: [])


def png_figures(monkeypatch):
    """Make the experiments' ``plots.save_figure`` write ``<name>.png`` only (the PDF is the same
    figure through another backend; that it is written is checked where the PDF is under test)."""
    from numerics.experiments import plots
    from numerics.output import files
    from numerics.output.style import DPI, EXPERIMENT_STYLE
    monkeypatch.setattr(plots, "save_figure", lambda fig, directory, name: files.save_figure(
        fig, directory, name, ("png",), DPI, style=EXPERIMENT_STYLE))
