"""A JavaScript adapter's callback that throws, or returns garbage, fails its run with an
error naming it; nothing reaches the harness (real Node, the supervisor, a real agent)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from axis_eval.adapters.loader import load_adapter
from axis_eval.adapters.registry import CustomAdapterRef
from axis_eval.execute.supervise import run_agent
from helpers.agent_runs import MakeInput, new_control
from helpers.system_parts import not_run

from . import adapters as src


@pytest.fixture(autouse=True)
def node() -> None:
    if shutil.which("node") is None:
        not_run("JAVASCRIPT ADAPTER TEST", "node is not on PATH")


@pytest.mark.parametrize(
    ("fault", "kind", "error"),
    [
        (None, None, None),
        (
            "resolveCommand",
            "spawn",
            "faulty: resolveCommand threw TypeError: resolveCommand is broken",
        ),
        ("buildArgs", "spawn", "faulty: buildArgs threw TypeError: buildArgs is broken"),
        ("isolationEnv", "spawn", "faulty: isolationEnv threw TypeError: isolationEnv is broken"),
        (
            "prepare",
            "setup",
            "faulty: prepare raised JavaScriptError: TypeError: prepare is broken",
        ),
        ("initialState", "agent", "faulty: initialState threw TypeError: initialState is broken"),
        ("onEnd", "agent", "faulty: onEnd threw TypeError: onEnd is broken"),
        (
            "getResult",
            "agent",
            "faulty: getResult must return {result: string | null, metadata?}, got 7",
        ),
    ],
)
async def test_each_callback_fault_fails_the_run_naming_it(
    tmp_path: Path,
    make_input: MakeInput,
    monkeypatch: pytest.MonkeyPatch,
    fault: str | None,
    kind: str | None,
    error: str | None,
) -> None:
    if fault is not None:
        monkeypatch.setenv("FAULT", fault)  # the Node hosts inherit it
    module = tmp_path / "faulty.mjs"
    module.write_text(src.fill(src.FAULTY_JS))
    adapter = load_adapter(CustomAdapterRef(name="faulty", node_module=str(module)))
    inp = make_input("say hi")
    if adapter.isolation_env is not None:  # as a job does, before anything else
        inp.env.update(adapter.isolation_env(inp.workspace, inp.home))
    out = await run_agent(adapter, inp, new_control())
    assert (out.error, out.error_kind) == (error, kind)
    assert out.failed is (error is not None)
    if error is None:
        assert out.result == "fine"
        assert inp.env["FROM_PREPARE"] == "yes" and inp.env["FAULTY"] == "1"


def test_the_documented_typescript_adapter_loads(tmp_path: Path) -> None:
    import re

    from axis_eval._util import node_ts
    from axis_eval.adapters.base import LinesMode
    from axis_eval.adapters.node_adapter import NodeAgentAdapter

    node = shutil.which("node")
    assert node is not None
    try:
        node_ts.typescript_node_args(node)
    except node_ts.TypeScriptUnavailable as exc:
        not_run("TYPESCRIPT ADAPTER TEST", f"{exc.message} ({exc.hint})")
    docs = Path(__file__).resolve().parents[3] / "docs" / "adapters.md"
    (block,) = re.findall(r"```ts\n(.*?)```", docs.read_text(), flags=re.DOTALL)
    module = tmp_path / "echo-adapter.ts"
    module.write_text(block)
    adapter = load_adapter(CustomAdapterRef(name="echo", node_module=str(module)))
    assert isinstance(adapter, NodeAgentAdapter) and isinstance(adapter.stream, LinesMode)
    assert adapter.name == "echo" and adapter.prompt_via == "argv"
    assert adapter.resolve_command is not None


async def test_no_callback_blocks_the_event_loop(
    tmp_path: Path, make_input: MakeInput, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every callback busies its Node host for 0.5 s; a ticker on the event loop must keep
    # ticking throughout (a blocking call would leave a gap of at least that).
    import asyncio
    import time

    from axis_eval.adapters.hooks import run_hook

    monkeypatch.setenv("SLOW_MS", "500")
    module = tmp_path / "slow.mjs"
    module.write_text(src.fill(src.SLOW_HOOKS_JS))
    adapter = load_adapter(CustomAdapterRef(name="slow", node_module=str(module)))
    inp = make_input("say hi")
    gaps: list[float] = []

    async def tick() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    try:
        started = time.monotonic()
        assert adapter.isolation_env is not None
        inp.env.update(await run_hook(adapter.isolation_env, inp.workspace, inp.home))
        out = await run_agent(adapter, inp, new_control())
        took = time.monotonic() - started
    finally:
        ticker.cancel()
    assert (out.error, out.result) == (None, "8 lines"), out.error
    assert inp.env["SLOW_HOOKS"] == "1"
    # isolationEnv, resolveCommand, buildArgs, prepare, initialState, onLine (one batch or
    # more), onEnd, getResult: at least 8 slow calls, none of them on the loop.
    assert took >= 8 * 0.5
    assert max(gaps) < 0.4, f"the event loop stalled for {max(gaps):.2f}s"
