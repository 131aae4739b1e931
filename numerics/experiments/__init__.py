"""The paper's synthetic experiments in NumPy (Figure 2, Figure 3, matched-loss sweep).

See :mod:`numerics.experiments.runner` for running independent jobs on local
processes or a Dask cluster with atomic, resumable result storage.
"""
