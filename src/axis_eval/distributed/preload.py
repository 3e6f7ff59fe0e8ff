"""``dask worker --preload axis_eval.distributed.preload``: a worker that is ready at once.

Without it, a worker imports axis-eval's job path (the adapters, the sandboxes, process
control, the file formats: ~0.3 s of CPU here, ~0.7 s profiled) when its first task
arrives, the run's pre-flight check, so every run's first jobs wait for it while the
workers compete with ``axis run`` for the cores. A preloaded worker pays that once, when it
starts. ``axis run --executor dask --workers N`` preloads its local workers.
"""

from __future__ import annotations

MODULE = __name__
"""What to pass to ``dask worker --preload`` (and to a LocalCluster's ``preload``)."""


def dask_setup(worker: object) -> None:
    """Import what a job runs on this worker (Dask calls this as the worker starts)."""
    import axis_eval.distributed.worker  # noqa: F401  -- imported for its cost, once
