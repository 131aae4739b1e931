"""Drawing no figures in tests about stored numbers (a PNG and a PDF take about a second each)."""


def skip_figures(monkeypatch):
    """Make the experiments' ``plots.save_figure`` write nothing (and return no paths)."""
    from numerics.experiments import plots
    monkeypatch.setattr(plots, "save_figure", lambda fig, directory, name: [])
