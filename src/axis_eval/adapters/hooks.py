"""Adapter hooks that wait on another process run off the event loop.

An adapter's hooks (``isolation_env``, ``resolve_command``, ``build_args``, ``prepare``,
``extract_usage``) are plain functions, called by the job as it starts. A Python adapter's
run in the event loop, as they always did. A JavaScript adapter's are answered by its Node
host, up to the callback time limit each: they are :class:`BlockingHook` objects, and the
job awaits them through :func:`run_hook` (or :func:`command_line_off_loop`), which runs them
in a thread of their own, so a slow or hung callback stalls its own job only.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, ParamSpec, TypeVar

from axis_eval.adapters.base import AdapterInput, AgentAdapter, command_line

__all__ = ["BlockingHook", "command_line_off_loop", "run_hook"]

P = ParamSpec("P")
R = TypeVar("R")

_THREADS = 16
"""Threads for blocking hooks, apart from asyncio's default pool (which the jobs use for
their files): hooks of one adapter queue for its host anyway, one at a time."""
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


class BlockingHook(Generic[P, R]):
    """A hook that blocks until another process answers: callable as the function it
    wraps, and awaited by :func:`run_hook` in a thread instead of in the event loop."""

    def __init__(self, fn: Callable[P, R]) -> None:
        self.fn = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)


def _threads() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="axis-adapter-hook")
        return _pool


async def run_hook(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args)``: in a thread when it is a :class:`BlockingHook`, else right here."""
    if not isinstance(fn, BlockingHook):
        return fn(*args, **kwargs)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_threads(), functools.partial(fn, *args, **kwargs))


async def command_line_off_loop(adapter: AgentAdapter[Any], inp: AdapterInput) -> list[str]:
    """:func:`~axis_eval.adapters.base.command_line`, in a thread when a hook it calls
    (``resolve_command``, ``build_args``) blocks."""
    hooks = (adapter.resolve_command, adapter.build_args)
    if not any(isinstance(hook, BlockingHook) for hook in hooks):
        return command_line(adapter, inp)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_threads(), command_line, adapter, inp)
