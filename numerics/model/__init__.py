"""The full-matrix attention model: task instances, the one model class (and the
paper's fast path), the invariant family.

========================================  ====================================================
:mod:`numerics.model.instance`            :class:`TaskInstance`, :func:`paper_instance`,
                                          :func:`instance_of_task`
:mod:`numerics.model.attention`           :class:`TaskModel`: the model on any instance
:mod:`numerics.model.paper`               :class:`AttentionModel`: the paper's task, sparse
                                          forward pass and gradient
:mod:`numerics.model.family`              the invariant family of every task: structured
                                          initialization, the engine's basis, projection,
                                          distance (and the paper's mu coordinates)
========================================  ====================================================
"""
from .attention import INIT_KINDS, TaskModel
from .family import FamilyProjector, basis, project, structured_params, summarize, task_basis
from .instance import TaskInstance, instance_of_task, paper_instance
from .paper import MAX_CLASSES, AttentionModel

__all__ = ["TaskInstance", "paper_instance", "instance_of_task", "TaskModel", "INIT_KINDS",
           "AttentionModel", "MAX_CLASSES", "basis", "structured_params",
           "project", "summarize", "FamilyProjector", "task_basis"]
