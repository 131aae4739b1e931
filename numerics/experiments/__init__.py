r"""The paper's synthetic experiments in NumPy (Figure 2, Figure 3, a matched-loss sweep).

Modules
-------
:mod:`~numerics.experiments.task_sampling`
    The sampled task: the authors' (:data:`~numerics.experiments.task_sampling.AUTHORS`)
    and every task of the engine (``--task``, ``--params``), its expected counts.
:mod:`~numerics.experiments.sampler`
    The one sampler: exact multinomial counts from uniform tickets
    (:class:`numpy.random.Generator`), of many runs in one pass.
:mod:`~numerics.experiments.models`
    The count model of every task, four parameterizations (FAFO, FACO, CAFO,
    CACO), with analytic gradients: :func:`~numerics.experiments.models.loss_and_grad`
    (batch or population loss for given, possibly real-valued, counts; optional
    per-sequence weights), sparse in the query rows and stacked over runs.
:mod:`~numerics.experiments.sgd`, :mod:`~numerics.experiments.stopping`
    Plain SGD with one rate per circuit, the linear QK ramp, the authors' stop
    rule (with its 100-epoch running-sum quirk) or a target loss; the seeds of
    one configuration are trained stacked (one batched step for all seeds).
:mod:`~numerics.experiments.precision`
    The floating type of the SGD step: float64 (default, bitwise reproducible)
    or float32 (as the authors trained; ``--dtype float32``).
:mod:`~numerics.experiments.fixed_attention`
    The Figure-3 fixed-attention model, batches and runs (stacked over the attention levels).
:mod:`~numerics.experiments.measure`
    The evaluation: heatmap, separability, attention shares, final loss and accuracy on fresh batches.
:mod:`~numerics.experiments.proxies`
    Interpretability proxies: attention entropy, plausibility (AUPRC, token F1)
    and faithfulness (ERASER's comprehensiveness and sufficiency AOPC).
:mod:`~numerics.experiments.theory`, :mod:`~numerics.experiments.predict`
    The expected-count gradient flow of a task from each seed's initial matrices, and its records.
:mod:`~numerics.experiments.flow_crossover`
    The crossover ratio of that flow (self share = relevant share at a target loss), for any task
    and start: the authors' task's ``boundary``.
:mod:`~numerics.experiments.jobs`, :mod:`~numerics.experiments.sweep`, :mod:`~numerics.experiments.reproduce`
    Job functions, the matched-loss sweep, every published run.
:mod:`~numerics.experiments.plots`, :mod:`~numerics.experiments.proxy_plots`
    Figure-2 heatmaps, Figure-3 curves, the sweep plot, the proxies' plot (PNG + PDF).
:mod:`~numerics.experiments.runner`
    Running jobs in-process, on local processes (:mod:`~numerics.experiments.pool`)
    or on a Dask cluster (:mod:`~numerics.experiments.cluster`), with an atomic,
    resumable result store (:mod:`~numerics.experiments.store`).
:mod:`~numerics.experiments.directory`, :mod:`~numerics.experiments.settings`
    An experiment's output directory (sweep, reproduction, one Figure-2 run):
    its lock, its kind, its checked settings, its files; a sweep's recorded
    settings checked, compared with a command line's and continued.
:mod:`~numerics.experiments.memory`
    The memory a configuration's arrays take, checked before any work.
:mod:`~numerics.experiments.commands`
    The command line, one module per command (``fig2``, ``fig3``, ``sweep``,
    ``reproduce``, ``predict``, ``boundary``) and what they share.

Command line: ``python -m numerics.experiments {fig2,fig3,sweep,reproduce,predict,boundary} --help``.

The names below are exported from their modules and imported on first access:
importing this package imports no submodule (the CLI starts fast).

>>> from numerics.experiments import AUTHORS, Fig2Config
>>> Fig2Config().sampled_task is AUTHORS
True
"""
from derivations.core.exports import lazy_exports

#: ``{defining submodule: public names}``.
_HOMES = {
    ".task_sampling": ("SampledTask", "AUTHORS", "sampled_task", "expected_counts"),
    ".sampler": ("Batch", "sample_batches"),
    ".models": ("init_params", "forward", "loss_and_grad"),
    ".sgd": ("Fig2Config", "train_fig2"),
    ".stack": ("train_stack",),
    ".fixed_attention": ("Fig3Config", "train_fig3"),
    ".measure": ("evaluate",),
    ".proxies": ("attention_entropy", "plausibility", "faithfulness"),
    ".theory": ("flow_to_losses",),
    ".flow_crossover": ("flow_boundary",),
    ".sweep": ("sweep_jobs", "rows_from_results", "summarize"),
    ".runner": ("run_jobs",),
    ".directory": ("ExperimentDirectory",),
}
__all__ = [name for names in _HOMES.values() for name in names]
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
