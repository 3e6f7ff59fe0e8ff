"""Reaching a Dask cluster: a running scheduler, or a local cluster started for the run.

Everything binds 127.0.0.1 when this module starts it; a scheduler given by address is
reached as Dask's own config says (``tls://`` and its ``distributed.comm.tls`` settings
included). Dask is an extra (``pip install 'axis-eval[dask]'``): without it, asking for
the ``dask`` executor is a pre-flight error, not an import error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
from typing import Any

from axis_eval.distributed import preload
from axis_eval.errors import PreflightError

__all__ = ["CONNECT_TIMEOUT_S", "PROBE_TIMEOUT_S", "WORKERS_TIMEOUT_S", "Cluster", "connect"]

CONNECT_TIMEOUT_S = 20.0
"""How long to try the scheduler before saying it cannot be reached."""
PROBE_TIMEOUT_S = 5.0
"""How long the first plain TCP probe of a ``tcp://``/``tls://`` scheduler may take."""
WORKERS_TIMEOUT_S = 60.0
"""How long to wait for a first worker at a scheduler that has none yet."""


class Cluster:
    """A connected client, and the local cluster when this run started one."""

    def __init__(self, client: Any, local: Any | None) -> None:
        self.client = client
        self._local = local
        self.address: str = str(client.scheduler.address)

    def lost(self) -> bool:
        """Whether the connection to the scheduler is gone (a client that is reconnecting
        lost it: whatever it sends now waits for a scheduler that may never come back)."""
        return str(self.client.status) != "running"

    async def workers(self, *, wait: bool = True) -> dict[str, dict[str, float]]:
        """Each worker's address and resources (``wait``: once at least one is connected).

        Raises:
            PreflightError: no worker connected in :data:`WORKERS_TIMEOUT_S`.
        """
        try:
            if wait:
                await self.client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
        except TimeoutError as exc:
            raise PreflightError(
                f"no Dask worker joined the scheduler at {self.address} in {WORKERS_TIMEOUT_S:g} s",
                hint="start workers: `dask worker ADDRESS --nthreads N --resources slot=N`",
            ) from exc
        info = await self.client.scheduler.identity()
        return {
            str(address): dict(worker.get("resources") or {})
            for address, worker in info.get("workers", {}).items()
        }

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            # A lost scheduler: the client's reconnect wait is not worth sitting through.
            wait = 1 if self.lost() else 5
            await asyncio.wait_for(self.client.close(timeout=wait), 2 * wait)
        if self._local is not None:
            with contextlib.suppress(Exception):
                await self._local.close()


def _quiet() -> None:
    """Dask's own log lines off in ``axis run`` (its workers keep theirs): the client logs a
    traceback for each failed reconnect, and what a lost cluster means for the run is said
    by the run itself (each job's error, the summary), once. Dask configures each of its
    loggers, so each is set."""
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "distributed"]
    for name in ["distributed", *names]:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise PreflightError(
            "the dask executor needs Dask distributed, which is not installed",
            hint="pip install 'axis-eval[dask]'",
        ) from exc
    return distributed


def _refused(scheduler: str) -> str | None:
    """Why nothing can listen at ``scheduler`` (None: something may, or it is not TCP).

    Dask's client retries a refused connection until its timeout; a refusal (or a host name
    that does not resolve) is final, so pre-flight says so at once instead of after
    :data:`CONNECT_TIMEOUT_S`. Anything else (a slow network, a firewall that drops) is
    left to Dask's own retries.
    """
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(scheduler)
        if scheme not in ("tcp", "tls"):
            return None
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        return None  # Dask names a malformed address itself
    try:
        with socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S):
            return None
    except (ConnectionRefusedError, socket.gaierror) as exc:
        return str(exc) or type(exc).__name__
    except OSError:
        return None


async def connect(scheduler: str | None, workers: int | None, concurrency: int) -> Cluster:
    """A client of ``scheduler``; without one, of a local cluster of ``workers`` processes
    (default: one per core) whose slots add up to ``concurrency``.

    Raises:
        PreflightError: Dask is not installed, or the scheduler cannot be reached.
    """
    distributed = _import_distributed()
    _quiet()
    if scheduler is not None:
        refused = await asyncio.to_thread(_refused, scheduler)
        if refused is not None:
            raise PreflightError(
                f"cannot reach the Dask scheduler at {scheduler}: {refused}",
                hint="check the address (tcp://HOST:PORT) and that `dask scheduler` runs there",
            )
        try:
            client = await distributed.Client(
                scheduler, asynchronous=True, timeout=CONNECT_TIMEOUT_S, set_as_default=False
            )
        except (OSError, TimeoutError, ValueError) as exc:
            raise PreflightError(
                f"cannot reach the Dask scheduler at {scheduler}: {exc}",
                hint="check the address (tcp://HOST:PORT) and that `dask scheduler` runs there",
            ) from exc
        return Cluster(client, None)
    count = workers or os.cpu_count() or 1
    slots = max(1, math.ceil(concurrency / count))
    local = await distributed.LocalCluster(
        n_workers=count,
        threads_per_worker=slots,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        resources={"slot": slots},
        preload=[preload.MODULE],  # each worker imports the job path as it starts
        asynchronous=True,
        silence_logs=logging.ERROR,
    )
    client = await distributed.Client(local, asynchronous=True, set_as_default=False)
    return Cluster(client, local)
