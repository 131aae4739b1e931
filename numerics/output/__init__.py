r"""Figures (matplotlib, Agg backend): the theory figures, one style, one ``save_figure``.

:func:`make_figures` (:mod:`numerics.output.figures`) makes them, also as the command ``python -m
numerics.figures [--output DIR] [--quick]`` (default ``docs/figures``). Every figure is written as
``<name>.png`` (150 dpi) and ``<name>.pdf``; all use the paper setting
:data:`~derivations.core.vocabulary.PAPER_SETTING` (m = 5, n = 50, b = 50, M = 20) with :math:`\eta_{OV} = 1` and
:math:`\eta_{QK} = r` for the ratios :data:`~numerics.output.style.RATIOS` unless stated.

=========================  ====================================================
figure                     content (function)
=========================  ====================================================
``time_course``            :func:`plot_time_course`: :math:`\mu_{OV}`,
                           :math:`\mu_{QK}`, :math:`\alpha` and the loss
                           against time (CACO, reduced ODE).
``stopping_curves``        :func:`plot_stopping_curves` (the paper's Figure 4):
                           the state at 50 stopping losses from 1 to 1e-4,
                           from the closed form
                           (:func:`numerics.dynamics.closed_form.state_at_loss`).
``line_coordinates``       :func:`plot_line_coordinates`: trajectories in the
                           coordinates (X, Y) of the first integral
                           (``CACO.line_X``, ``CACO.line_Y``,
                           ``CACO.line_slope`` of the catalog, generated:
                           :func:`numerics.functions.lambdified.line_coordinates_fn`),
                           where they are the straight lines
                           :math:`Y - Y_0 = \text{slope}\,(X - X_0)`, and the
                           drift of the first integral.
``simulation_vs_theory``   :func:`plot_simulation_vs_theory`: full-matrix
                           gradient flow (:func:`numerics.dynamics.training.gradient_flow`,
                           structured init = zero circuits) as markers over
                           the reduced ODE and the closed form (lines).
``parameterizations``      :func:`plot_parameterizations`: CACO, CAFO, FACO,
                           FAFO at equal base rates (all rates 1, factor init
                           scale 1e-2).
``phase_diagram``          :func:`~numerics.output.attention.plot_phase_diagram`:
                           self minus relevant share at the stopping loss over
                           (s/m, Lambda), the crossover and the window, and the
                           stored SGD runs by the share that leads.
``master_curve``           :func:`~numerics.output.attention.plot_master_curve`:
                           the shares against Lambda, the engine's flows at
                           several (L, M, b) and the stored SGD runs on the
                           master curve.
=========================  ====================================================

Nothing here types a formula of the theory: the curves come from
:mod:`numerics.dynamics.reduced_ode`, :mod:`numerics.dynamics.closed_form` and the functions
generated from :mod:`derivations.catalog` (:mod:`numerics.functions.lambdified`;
their expressions' LaTeX, from :func:`sympy.latex`, labels the axes).

``--quick`` uses coarser grids (for tests); the curves are the same. The SGD points are read,
not trained (:func:`numerics.output.attention.sgd_points`; a damaged file is one line before any
figure is made).
The total run time is a few seconds (SymPy is imported only for the axis
labels of ``line_coordinates``).

=================================  =============================================
module                             what
=================================  =============================================
:mod:`numerics.output.style`       sizes, colors, labels (one style; the
                                   experiments' figures share its
                                   :data:`~numerics.output.style.BASE_STYLE`)
:mod:`numerics.output.files`       :func:`save_figure` (the one for every
                                   figure of the package, also
                                   :func:`numerics.experiments.plots.save_figure`),
                                   formats, resolution, output directory
:mod:`numerics.output.theory`      the first five figures above and the registry
:mod:`numerics.output.attention`   the figures of where attention goes
:mod:`numerics.output.figures`     :func:`make_figures`: chooses, checks and
                                   writes the figures (and the command's
                                   parser and ``main``)
=================================  =============================================
"""
from .files import FORMATS, check_dpi, check_formats, prepare_figure_dir, save_figure
from .figures import DEFAULT_OUTPUT, make_figures
from .style import (ALPHA_LABEL, BASE_STYLE, DPI, DPI_RANGE, LOSS_LABEL, MU_OV_LABEL,
                    MU_QK_LABEL, PARAM_COLORS, PARAM_STYLE, RATIOS, STYLE, T_LABEL, WIDTH)
from .theory import (FIGURES, plot_line_coordinates, plot_parameterizations,
                     plot_simulation_vs_theory, plot_stopping_curves, plot_time_course)

__all__ = ["make_figures", "DEFAULT_OUTPUT", "save_figure", "prepare_figure_dir", "check_dpi", "check_formats", "FIGURES", "FORMATS",
           "plot_time_course", "plot_stopping_curves", "plot_line_coordinates",
           "plot_simulation_vs_theory", "plot_parameterizations", "RATIOS", "WIDTH",
           "DPI", "DPI_RANGE", "BASE_STYLE", "STYLE", "PARAM_STYLE", "PARAM_COLORS", "T_LABEL",
           "LOSS_LABEL", "ALPHA_LABEL", "MU_OV_LABEL", "MU_QK_LABEL"]
