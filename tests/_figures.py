"""Figures of the experiments in tests: none built (a sweep's two figures take about a fifth of a
second to build and a second each to save as PNG and PDF), built but not saved, or only those a
test looks at saved."""

#: The experiments' figure builders (module, names): each returns a figure that
#: ``plots.save_figure`` writes.
BUILDERS = (("numerics.experiments.plots", ("plot_fig2_heatmaps", "plot_fig3", "plot_sweep")),
            ("numerics.experiments.proxy_plots", ("plot_proxies",)))


def skip_figures(monkeypatch):
    """Make the experiments build no figure and write none: every builder of :data:`BUILDERS`
    returns ``None`` and ``plots.save_figure`` writes nothing (and returns no paths)."""
    import importlib
    for module, names in BUILDERS:
        module = importlib.import_module(module)
        for name in names:
            monkeypatch.setattr(module, name, lambda *args, **kwargs: None)
    unsaved_figures(monkeypatch)


def unsaved_figures(monkeypatch):
    """Make the experiments build their figures from what they computed, but write none
    (``plots.save_figure`` writes nothing and returns no paths)."""
    from numerics.experiments import plots
    monkeypatch.setattr(plots, "save_figure", lambda fig, directory, name: [])


def only_figures(monkeypatch, names, formats=("png", "pdf")):
    """Make the experiments write only the figures named in ``names``, in ``formats``; the others are
    built but not written (a test looks at the figures it names; the PDF is the same figure through
    another backend, checked where a test looks at it)."""
    from numerics.experiments import plots
    from numerics.output import files
    from numerics.output.style import DPI, EXPERIMENT_STYLE

    def save(fig, directory, name):
        return files.save_figure(fig, directory, name, formats, DPI, style=EXPERIMENT_STYLE) if name in names else []
    monkeypatch.setattr(plots, "save_figure", save)
