"""``executor``: where a run's jobs run.

``settings.executor`` is a kind or an object::

    executor: local                                   # default: this process
    executor: dask                                    # a Dask cluster (docs/distributed.md)
    executor: {kind: dask, scheduler: "tcp://10.0.0.5:8786"}
    executor: {kind: dask, workers: 4}                # a local cluster of 4 worker processes

``axis run --executor``, ``--scheduler`` and ``--workers`` win over it, and the scheduler
may also come from ``AXIS_DASK_SCHEDULER``. Planning, limits, scoring and the report stay
in ``axis run`` whatever the executor: only the jobs travel.
"""

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from axis_eval.config._base import Bounds, InputModel, NonEmptyStr

__all__ = ["SCHEDULER_ENV", "ExecutorConfig", "ExecutorKind"]

ExecutorKind = Literal["local", "dask"]
"""``local``: this process's event loop; ``dask``: the workers of a Dask cluster."""

SCHEDULER_ENV = "AXIS_DASK_SCHEDULER"
"""The variable naming the scheduler when neither the flag nor the config does."""

Workers = Annotated[int, Field(strict=True), Bounds(gt=0, le=256)]


class ExecutorConfig(InputModel):
    """``settings.executor``: a kind, or ``{kind, scheduler, workers}``."""

    kind: ExecutorKind = "local"
    scheduler: NonEmptyStr | None = None
    """The Dask scheduler's address (``tcp://HOST:PORT``, or ``tls://`` with the security
    settings Dask reads from its own config)."""
    workers: Workers | None = None
    """Without a scheduler: start a local cluster of this many worker processes."""

    @model_validator(mode="before")
    @classmethod
    def _bare_kind(cls, data: Any) -> Any:
        return {"kind": data} if isinstance(data, str) else data
