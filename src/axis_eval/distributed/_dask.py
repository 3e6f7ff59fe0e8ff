"""The few Dask coordination calls a run makes, typed in one place (Dask's are not).

Every call goes through the client it is given: on a worker, the worker's own client
(``get_client()`` inside a task); in ``axis run``, the run's asynchronous client. Dask is
imported on first use: without it, ``axis run`` must reach its pre-flight error.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_variable", "set_event", "set_variable", "wait_event"]


async def wait_event(name: str, client: Any) -> None:
    """Until the event ``name`` is set."""
    from distributed import Event

    await Event(name, client=client).wait()  # type: ignore[no-untyped-call]


async def set_event(name: str, client: Any) -> None:
    from distributed import Event

    await Event(name, client=client).set()  # type: ignore[no-untyped-call]


async def get_variable(name: str, client: Any, timeout: float) -> Any:
    """The variable's value; raises ``TimeoutError`` when none is set within ``timeout``."""
    from distributed import Variable

    return await Variable(name, client=client).get(timeout=timeout)  # type: ignore[no-untyped-call]


async def set_variable(name: str, value: Any, client: Any) -> None:
    from distributed import Variable

    await Variable(name, client=client).set(value)  # type: ignore[no-untyped-call]
