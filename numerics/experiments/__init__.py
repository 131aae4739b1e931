r"""The paper's synthetic experiments in NumPy (Figure 2, Figure 3, a matched-loss sweep).

Modules
-------
:mod:`~numerics.experiments.data`
    Token distributions, online Figure-2/Figure-3 batches as token-count
    vectors (exact multinomial counts from uniform tickets, :class:`numpy.random.Generator`),
    explicit sequences,
    expected counts.
:mod:`~numerics.experiments.models`
    The four Figure-2 parameterizations (FAFO, FACO, CAFO, CACO) and the
    Figure-3 fixed-attention models on count vectors, with analytic gradients:
    :func:`~numerics.experiments.models.loss_and_grad` (batch or population
    loss for given, possibly real-valued, counts; optional per-sequence weights).
:mod:`~numerics.experiments.sgd`
    Plain SGD with one rate per circuit, the linear QK ramp, the authors' stop
    rule (with its 100-epoch running-sum quirk) or a target loss; the seeds of
    one configuration are trained stacked (one batched step for all seeds).
:mod:`~numerics.experiments.task_sampling`, :mod:`~numerics.experiments.task_model`
    SGD on the engine's tasks (``--task``, ``--params``): a task's sampled version
    (ticket tables from its multiplicities) and its count model on :math:`T` token
    types (:math:`d` embedded, :math:`n_{out}` outputs), with gradients, SGD epochs
    and measurements.
:mod:`~numerics.experiments.precision`
    The floating type of the SGD step: float64 (default, bitwise reproducible)
    or float32 (as the authors trained; ``--dtype float32``).
:mod:`~numerics.experiments.fixed_attention`
    The Figure-3 fixed-attention runs (stacked over the attention levels).
:mod:`~numerics.experiments.measure`
    Heatmap, separability, final loss and accuracy on fresh batches.
:mod:`~numerics.experiments.jobs`, :mod:`~numerics.experiments.sweep`, :mod:`~numerics.experiments.reproduce`
    Job functions, the matched-loss sweep, every published run.
:mod:`~numerics.experiments.plots`
    Figure-2 heatmaps, Figure-3 curves, the sweep plot (PNG + PDF).
:mod:`~numerics.experiments.runner`
    Running jobs in-process, on local processes (:mod:`~numerics.experiments.pool`)
    or on a Dask cluster (:mod:`~numerics.experiments.cluster`), with an atomic,
    resumable result store (:mod:`~numerics.experiments.store`).
:mod:`~numerics.experiments.directory`
    An experiment's output directory (sweep, reproduction, one Figure-2 run):
    its lock, its kind, its checked settings, its files.
:mod:`~numerics.experiments.memory`
    The memory a configuration's arrays take, checked before any work.
:mod:`~numerics.experiments.commands`
    The command line, one module per command (``fig2``, ``fig3``, ``sweep``,
    ``reproduce``, ``predict``) and what they share.

Command line: ``python -m numerics.experiments {fig2,fig3,sweep,reproduce,predict} --help``.

Importing this package imports no submodule (the CLI starts fast).
"""
