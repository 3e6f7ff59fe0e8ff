"""Fuzz the client side of an ACP session: what reads an ACP agent's JSON-RPC messages.

Three levels, each the one a real run goes through: one stdout line at a time
(:meth:`StdioTransport.take`, which reports to the session and decides what the ``acp``
package sees), a whole conversation (:meth:`AcpSession.read` against an in-process agent
that answers the handshake with real recorded messages, mutated ones and garbage), and one
whole run through the supervisor with a fake process. Properties: nothing raises, nothing
hangs (every example is bounded; the fake agent ends its output when its script ends), a
message that cannot be read is warned about, the transcript and the raw output can be
written.

The fake agent never sends ``fs/*`` requests: the client serves those from the real file
system (covered by test_fake_agent.py with a temporary workspace).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from adapters.fuzzing import (
    GARBAGE_LINES,
    HUGE_INT,
    Notes,
    adapter_input,
    assert_valid_transcript,
    assert_writable,
    builder,
    dumps,
    events,
    examples,
    field_mutations,
    garbage,
    mutated,
    nested,
    recorded,
    recorded_acp,
    run_async,
    time_limit,
    wild_values,
)
from axis_eval.adapters._acp_client import StdioTransport
from axis_eval.adapters._acp_session import AcpSession
from axis_eval.adapters.acp import AcpAdapter, create_acp_adapter
from axis_eval.adapters.supervision import NOT_JSON, Reading
from axis_eval.execute.process import ProcessSpec, new_run_token
from axis_eval.execute.supervise import RunControl, run_agent

RECORDINGS = ("acp-claude-sdk", "acp-gemini-acp")
MESSAGES = [m for name in RECORDINGS for m in recorded_acp(name)]
"""Everything the two real agents sent: answers, updates, a permission request."""
EXTRA_UPDATES: list[dict[str, Any]] = [  # update kinds the recordings do not have
    {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}},
    {"sessionUpdate": "plan", "entries": [{"content": "a", "status": "pending"}]},
    {
        "sessionUpdate": "tool_call",
        "toolCallId": "c9",
        "title": "Read",
        "status": "completed",
        "rawOutput": {"lines": 3},
        "content": [{"type": "diff", "path": "/w/a"}, {"type": "terminal", "terminalId": "t"}],
    },
    {"sessionUpdate": "usage_update", "used": 7, "cost": {"amount": 0.5, "currency": "USD"}},
    {"sessionUpdate": "agent_message_chunk", "_meta": {"usage": {"inputTokens": 3}}},
]
NOTIFICATIONS = [m for m in MESSAGES if "method" in m]
NOTIFICATIONS += [
    {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}}
    for u in EXTRA_UPDATES
]
NOTIFICATIONS.append({"jsonrpc": "2.0", "method": "_vendor/progress", "params": {"x": 1}})
SEEDS = [m for m in MESSAGES if "method" not in m] + NOTIFICATIONS


def _shape(message: dict[str, Any]) -> str:
    params = message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    return f"{message.get('method')}/{kind}/{sorted(update) if isinstance(update, dict) else ''}"


SHAPES = list({_shape(m): m for m in reversed(SEEDS)}.values())
"""One seed of each shape (method, update kind, fields), for the exhaustive mutations."""


def _results(name: str) -> dict[str, Any]:
    """The recorded answer to each of the client's requests, by method."""
    rows = recorded(name)
    asked = {
        r["msg"]["id"]: r["msg"]["method"]
        for r in rows
        if r.get("dir") == "client->agent" and "method" in r["msg"]
    }
    return {
        asked[r["msg"]["id"]]: r["msg"]["result"]
        for r in rows
        if r.get("dir") == "agent->client" and "result" in r["msg"] and r["msg"]["id"] in asked
    }


RESULTS = {name: _results(name) for name in RECORDINGS}
STEPS = ("initialize", "session/new", "session/prompt")


def acp_adapter() -> AcpAdapter:
    return create_acp_adapter(name="fuzz-acp", command=["fuzz-acp"])


def new_session(tmp: str = "/nonexistent", **agent: Any) -> tuple[AcpSession, Notes]:
    notes = Notes()
    return AcpSession(acp_adapter(), adapter_input(tmp, **agent), builder(), notes), notes


def safe(line: bytes) -> bytes:
    """No fs/* request reaches the client (it would touch the real file system)."""
    return line.replace(b'"fs/', b'"xx/')


# -- one line at a time ------------------------------------------------------------------


def acp_lines() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.sampled_from([dumps(m) for m in SEEDS]),
        st.builds(dumps, events(SEEDS)),
        garbage,
    ).map(safe)


def check_taken(message: dict[str, Any] | None) -> None:
    """What reaches the ``acp`` package is a shape its receive loop survives."""
    if message is None or message.get("method") is not None:
        return
    rid = message.get("id")
    assert rid is None or isinstance(rid, int | float | str)
    error = message.get("error")
    assert "result" in message or not error or isinstance(error, dict)


def read_lines(lines: list[bytes]) -> tuple[AcpSession, Notes, Reading]:
    session, notes = new_session()
    session.methods = {0: "initialize", 1: "session/new", 2: "session/prompt"}
    transport = StdioTransport(None, None, session)  # type: ignore[arg-type]
    with time_limit(5):
        for line in lines:
            check_taken(transport.take(line))
    session.prompt_result = session._raw_result("session/prompt") or None
    reading = run_async(session.finish(0, "", False))
    return session, notes, reading


def not_json_count(lines: list[bytes]) -> int:
    count = 0
    for line in lines:
        text = line.decode("utf-8", "replace").strip()
        if not text:
            continue
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = None
        count += not isinstance(value, dict)
    return count


def check_session(session: AcpSession, reading: Reading) -> None:
    assert reading.error is None or isinstance(reading.error, str)
    assert_valid_transcript(session.builder.transcript)
    assert_writable(session.raw_output)
    for line in session.raw_output:
        json.loads(line)  # raw.ndjson: one JSON value a line


@pytest.mark.fuzz
@examples(30)
@given(lines=st.lists(acp_lines(), max_size=15))
def test_no_line_makes_the_acp_reader_raise(lines: list[bytes]) -> None:
    session, notes, reading = read_lines(lines)
    check_session(session, reading)
    assert sum(1 for key, _ in notes.items if key == NOT_JSON) == not_json_count(lines)


def test_every_field_of_every_message_set_to_every_wrong_type() -> None:
    lines = [safe(dumps(m)) for seed in SHAPES for m in field_mutations(seed, 3)]
    assert len(lines) > 1000
    session, notes, reading = read_lines(lines)
    check_session(session, reading)
    assert "update warnings" in notes.kinds()  # e.g. a plan whose entries are a number


# -- concrete cases (each failed before its fix) ----------------------------------------


def _recorded_script(**steps: Step) -> dict[str, Step]:
    """The recorded claude-sdk answers, with some steps replaced."""
    real = RESULTS["acp-claude-sdk"]
    script = {m: Step([], _answer_of("result", real[m], None)) for m in STEPS}
    updates = [dumps(m) for m in recorded_acp("acp-claude-sdk") if "method" in m]
    script["session/prompt"].before = updates  # its messages and the answer "done"
    return {**script, **{k.replace("_", "/"): v for k, v in steps.items()}}


@pytest.mark.parametrize("rid", [[0], {"a": 0}], ids=["list", "object"])
def test_a_response_with_an_unhashable_id_does_not_end_the_session(rid: Any) -> None:
    """``{"id": [0], "result": …}`` raised TypeError (unhashable) inside the ``acp``
    package's receive loop, which then dropped the connection: the run failed with "The
    agent closed the ACP connection". Now it is recorded, warned about and left out."""
    real = RESULTS["acp-claude-sdk"]
    stray = dumps({"jsonrpc": "2.0", "id": rid, "result": {}})
    script = _recorded_script(
        initialize=Step([stray], _answer_of("result", real["initialize"], None))
    )
    session, notes, reading = run_async(converse(script, "/nonexistent"), 15)
    assert reading.error is None, reading.error
    assert session.builder.transcript.result == "done"
    assert ("protocol warnings" in notes.kinds()) and any(
        '"id": ' + json.dumps(rid) in line for line in session.raw_output
    )


def test_a_malformed_error_answer_fails_the_step_with_what_the_agent_sent() -> None:
    """``"error": "boom"``: the package popped the pending request, then its
    ``error.get(...)`` raised AttributeError, so that request was never resolved and the
    session hung until the time limit; now the step fails with what the agent sent."""
    script = _recorded_script(initialize=Step([], _answer_of("bad-error", None, "boom")))
    _, notes, reading = run_async(converse(script, "/nonexistent"), 15)
    assert reading.error is not None
    assert reading.error.startswith("ACP initialize failed: the agent sent a malformed error")
    assert "'boom'" in reading.error
    assert "protocol warnings" in notes.kinds()


def _update_line(update: dict[str, Any]) -> bytes:
    return dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"update": update}})


def test_surrogates_and_deep_nesting_in_messages_keep_the_run_writable() -> None:
    """A lone surrogate made transcript.json and raw.ndjson unwritable (UTF-8 refuses it);
    a tool input 300 levels deep made transcript.json unwritable (pydantic's limit)."""
    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "t\ud800",
        "rawInput": nested(300),
    }
    script = _recorded_script()
    script["session/prompt"].before.insert(0, _update_line(update))
    session, notes, reading = run_async(converse(script, "/nonexistent"), 15)
    check_session(session, reading)
    assert reading.error is None
    call = session.builder.transcript.tool_calls[0]
    assert call.name == "t\ufffd"
    assert (
        "stdout warnings",
        "an agent message was kept with lone surrogates (\\ud800-\\udfff)"
        " replaced with U+FFFD; values nested deeper than 64 levels left out",
    ) in notes.items


def test_odd_requests_and_notifications_are_answered_or_dropped_without_tracebacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The ``acp`` package logged a traceback (on the console: nothing configures logging)
    for every notification of a method it does not route, and for a request whose method
    is a list; a flooding agent filled the terminal. Now notifications other than
    session/update stay with the session, and such a request is answered "Method not
    found"."""
    odd = [
        {"jsonrpc": "2.0", "method": "x/unknown", "params": {}},
        {"jsonrpc": "2.0", "method": ["x"], "params": {}},
        {"jsonrpc": "2.0", "method": "session/request_permission", "params": {"toolCall": {}}},
        {"jsonrpc": "2.0", "id": 77, "method": ["x"], "params": {}},
    ]
    script = _recorded_script()
    script["session/prompt"].before[:0] = [dumps(m) for m in odd]
    seen: list[FakeAgent] = []
    with caplog.at_level(logging.WARNING):
        session, _, reading = run_async(converse(script, "/nonexistent", seen))
    [agent] = seen
    assert reading.error is None
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    [answer] = [a for a in agent.answers if a.get("id") == 77]
    assert answer["error"]["message"] == "Method not found"
    assert sum('"x/unknown"' in line for line in session.raw_output) == 1  # still recorded


@pytest.mark.parametrize(
    "value", [HUGE_INT, float("inf"), float("nan")], ids=["10**4000", "1e400", "NaN"]
)
def test_impossible_usage_and_cost_numbers_are_ignored(value: float) -> None:
    """10**4000 tokens overflowed the float arithmetic of the cost estimate in ``finish``
    (which raised out of the supervisor); an infinite or NaN cost was kept as the run's."""
    update = {"sessionUpdate": "usage_update", "used": value, "cost": {"amount": value}}
    result = {"stopReason": "end_turn", "usage": {"inputTokens": value, "outputTokens": value}}
    script = _recorded_script(
        session_prompt=Step([_update_line(update)], _answer_of("result", result, None))
    )
    session, _, reading = run_async(converse(script, "/nonexistent", model="claude-sonnet-4-5"))
    check_session(session, reading)
    transcript = session.builder.transcript
    assert transcript.usage.total == 0
    assert transcript.cost_usd is None


# -- a whole conversation ----------------------------------------------------------------


@dataclass
class Step:
    """What the fake agent does when the client sends one request."""

    before: list[bytes] = field(default_factory=list)
    """Lines printed first (updates, requests, garbage)."""
    answer: Callable[[Any], bytes | None] = lambda rid: None
    """The answer, given the request's id; None: no answer."""
    answers: bool = True
    """False: what ``answer`` gives is no answer to the request (a wrong id, garbage), so
    the output ends after it, as the time limit would end a real run."""


class FakeAgent:
    """The agent's ends of the pipes, in process: ``stdin`` (what the client writes) and
    ``stdout``, fed from a script as each request arrives."""

    def __init__(self, script: dict[str, Step]) -> None:
        self.script = script
        self.stdout = asyncio.StreamReader(limit=1 << 20)
        self.pending = b""
        self.closed = False
        self.on_close: list[Callable[[], object]] = []
        self.answers: list[dict[str, Any]] = []
        """The client's answers to the agent's own requests."""

    # what StdioTransport uses of a StreamWriter
    def write(self, data: bytes) -> None:
        self.pending += data
        *done, self.pending = self.pending.split(b"\n")
        for line in done:
            self.heard(json.loads(line))

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.end()
            for callback in self.on_close:
                callback()

    def end(self) -> None:
        if not self.stdout.at_eof():
            self.stdout.feed_eof()

    def print(self, line: bytes) -> None:
        if not self.stdout.at_eof():
            self.stdout.feed_data(line + b"\n")

    def heard(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            self.answers.append(message)  # the client's answer to one of our requests
            return
        step = self.script.get(method, Step())
        for line in step.before:
            self.print(line)
        answer = step.answer(message.get("id"))
        if answer is not None:
            self.print(answer)
        if answer is None or not step.answers or method == STEPS[-1]:
            self.end()  # nothing more will come: the client must not wait forever


def _answer_of(kind: str, result: Any, extra: Any) -> Callable[[Any], bytes | None]:
    def answer(rid: Any) -> bytes | None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if kind == "result":
            body["result"] = result
        elif kind == "error":
            body["error"] = {"code": -32603, "message": "model down", "data": extra}
        elif kind == "bad-error":
            body["error"] = extra
        elif kind == "wrong-id":
            body["id"] = extra
            body["result"] = result
        elif kind == "garbage":
            return extra if isinstance(extra, bytes) else b"{"
        else:
            return None
        return safe(dumps(body))

    return answer


ANSWER_KINDS = [
    *("result", "result", "result", "mutated"),  # mostly answered: the session goes on
    *("error", "bad-error", "wrong-id", "garbage", "none"),
]


@st.composite
def steps(draw: st.DrawFn, method: str) -> Step:
    name = draw(st.sampled_from(RECORDINGS))
    real = RESULTS[name][method]
    kind = draw(st.sampled_from(ANSWER_KINDS))
    result: Any = real
    extra: Any = None
    if kind == "mutated":
        kind, result = "result", draw(mutated([real]) if isinstance(real, dict) else wild_values)
    elif kind in ("error", "bad-error"):
        extra = draw(wild_values)
    elif kind == "wrong-id":
        extra = draw(st.one_of(wild_values, st.sampled_from([[0], {"id": 0}, 99, "0"])))
    elif kind == "garbage":
        extra = draw(garbage)
    before = draw(st.lists(acp_lines(), max_size=6))
    return Step(before, _answer_of(kind, result, extra), kind not in ("wrong-id", "garbage"))


@st.composite
def scripts(draw: st.DrawFn) -> dict[str, Step]:
    return {method: draw(steps(method)) for method in STEPS}


async def converse(
    script: dict[str, Step], tmp: str, seen: list[FakeAgent] | None = None, **agent_spec: Any
) -> tuple[AcpSession, Notes, Reading]:
    """One conversation with a fake agent made here (its pipes belong to this loop), which
    is appended to ``seen``."""
    agent = FakeAgent(script)
    if seen is not None:
        seen.append(agent)
    session, notes = new_session(tmp, **agent_spec)
    try:
        await asyncio.wait_for(session.read(agent.stdout, agent), 10)  # type: ignore[arg-type]
    finally:
        agent.close()
        await session.close()
    reading = await session.finish(0, "", False)
    return session, notes, reading


@pytest.mark.fuzz
@examples(25)
@given(script=scripts())
def test_no_conversation_makes_the_session_raise_or_hang(script: dict[str, Step]) -> None:
    session, _, reading = run_async(converse(script, "/nonexistent"), 15)
    check_session(session, reading)
    if session.prompt_result is None:
        assert reading.error is not None  # no answer is a failed run, with a reason


def test_a_recorded_session_survives_garbage_between_its_messages() -> None:
    updates = [dumps(m) for m in NOTIFICATIONS] + list(GARBAGE_LINES)
    real = RESULTS["acp-claude-sdk"]
    script = {method: Step(updates, _answer_of("result", real[method], None)) for method in STEPS}
    session, notes, reading = run_async(converse(script, "/nonexistent"), 15)
    check_session(session, reading)
    assert reading.error is None and reading.answered
    assert session.builder.transcript.result  # the recorded answer's text
    assert NOT_JSON in notes.kinds()


# -- a whole run, through the supervisor -------------------------------------------------


class FakeAcpProcess:
    """A ManagedProcess whose pipes are a :class:`FakeAgent`; it exits when its stdin is
    closed (as a well-behaved agent does on EOF) or when stopped."""

    def __init__(self, agent: FakeAgent) -> None:
        self.agent = agent
        self.stdout = agent.stdout
        self.stderr = asyncio.StreamReader()
        self.stderr.feed_eof()
        self.stdin = agent
        self.returncode: int | None = None
        self.exited = False
        self.callbacks: list[Callable[[], object]] = []
        agent.on_close.append(self._exit)

    def _exit(self) -> None:
        if not self.exited:
            self.exited = True
            self.returncode = 0
            for callback in self.callbacks:
                callback()

    def add_exit_callback(self, callback: Callable[[], object]) -> None:
        self.callbacks.append(callback)

    async def wait(self) -> int:
        while not self.exited:
            await asyncio.sleep(0.01)
        return self.returncode or 0

    async def stop(self, grace_s: float = 5.0) -> None:
        self.agent.close()


async def test_a_whole_hostile_acp_run_through_the_supervisor(tmp_path: Path) -> None:
    hostile = [safe(dumps(m)) for seed in NOTIFICATIONS[:6] for m in field_mutations(seed, 2)]
    bad_plan = {"sessionUpdate": "plan", "entries": 5}  # cannot be read: a warning
    hostile.append(
        dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"update": bad_plan}})
    )
    real = RESULTS["acp-gemini-acp"]
    script = {
        "initialize": Step(list(GARBAGE_LINES), _answer_of("result", real["initialize"], None)),
        "session/new": Step(hostile, _answer_of("result", real["session/new"], None)),
        "session/prompt": Step(
            hostile + [dumps(m) for m in NOTIFICATIONS],
            _answer_of("result", real["session/prompt"], None),
        ),
    }

    async def spawner(spec: ProcessSpec) -> FakeAcpProcess:
        return FakeAcpProcess(FakeAgent(script))

    control = RunControl(marker=f"{new_run_token()}/1", grace_s=0.1, spawner=spawner)
    inp = adapter_input(str(tmp_path), adapter="fuzz-acp")
    out = await asyncio.wait_for(run_agent(acp_adapter(), inp, control), 30)
    assert not out.failed, out.error
    assert out.transcript is not None
    assert_valid_transcript(out.transcript)
    assert_writable(out.raw_output)
    assert any("could not be read" in w for w in out.warnings), out.warnings
    assert any("lone surrogates" in w for w in out.warnings), out.warnings
