"""What the parser fuzz tests share: hostile JSON, garbage lines, mutated real events,
the checks every parsed run must pass, and a fake process for the supervisor.

Seeds are real streams recorded from the pinned CLIs against the scripted model server
(``fixtures/streams``), plus the shapes the unit tests use.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import settings, strategies as st

from axis_eval.adapters.base import AdapterInput
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.execute.process import ProcessSpec
from axis_eval.transcript.models import Transcript

STREAMS = Path(__file__).resolve().parent / "fixtures" / "streams"

# -- seeds -----------------------------------------------------------------------------


def recorded(name: str) -> list[dict[str, Any]]:
    """The events of one recorded stream (``fixtures/streams/<name>.ndjson``)."""
    lines = (STREAMS / f"{name}.ndjson").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def recorded_acp(name: str) -> list[dict[str, Any]]:
    """What the agent sent in one recorded ACP session (its ``agent->client`` messages)."""
    return [r["msg"] for r in recorded(name) if r.get("dir") == "agent->client" and "msg" in r]


# -- hostile values --------------------------------------------------------------------

HUGE_INT = 10**4000
"""Digits json.loads still accepts (its limit is 4300)."""

HOSTILE_STRINGS = [
    "",
    " ",
    "\ud800",
    "a\udfffb",
    "\ud83d",  # half of a surrogate pair
    "\x00",
    "\u2028",
    "<synthetic>",
    "success",
    "error",
    "completed",
    "failed",
    "null",
    "x" * 300,
]
HOSTILE_NUMBERS: list[Any] = [
    0,
    -1,
    1,
    2**63,
    -(2**63),
    HUGE_INT,
    -HUGE_INT,
    1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    0.5,
    -0.0,
    True,
    False,
]

texts = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.text(st.characters(exclude_categories=()), max_size=12),  # lone surrogates included
)
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(HOSTILE_NUMBERS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Any JSON-like value, leaves hostile."""
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def nested(depth: int, *, kind: str = "list") -> Any:
    """A value ``depth`` levels deep, built without recursion."""
    value: Any = "bottom"
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


DEPTHS = [63, 64, 65, 100, 199, 201, 260, 900]
deep_values = st.builds(nested, st.sampled_from(DEPTHS), kind=st.sampled_from(["list", "dict"]))
wild_values = st.one_of(json_values(), deep_values)
"""What replaces a field: hostile scalars, wrong containers, deep nesting."""


# -- mutations of real events ------------------------------------------------------------


def _paths(value: Any, limit: int, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths to ``value``'s parts, at most ``limit`` keys long."""
    yield prefix
    if len(prefix) >= limit:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, limit, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:8]):
            yield from _paths(item, limit, (*prefix, i))


def _replaced(value: Any, path: tuple[Any, ...], new: Any, *, delete: bool) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        if delete and not rest:
            copy.pop(head, None)
        else:
            copy[head] = _replaced(value[head], rest, new, delete=delete)
        return copy
    copy_list = list(value)
    if delete and not rest:
        del copy_list[head]
    else:
        copy_list[head] = _replaced(value[head], rest, new, delete=delete)
    return copy_list


@st.composite
def mutated(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> Any:
    """A seed event with one to three fields replaced by hostile values or deleted."""
    event: Any = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        # Shallow fields first: most of what a parser reads is one or two levels down.
        limit = draw(st.sampled_from([1, 1, 2, 2, 3, 5]))
        paths = list(_paths(event, limit))[1:] or [()]
        path = draw(st.sampled_from(paths))
        delete = bool(path) and draw(st.booleans())
        event = _replaced(event, path, None if delete else draw(wild_values), delete=delete)
    return event


WRONG_VALUES: list[Any] = [
    "x",
    "",
    None,
    [1],
    [],
    {"a": 1},
    {},
    -1,
    HUGE_INT,
    float("inf"),
    float("nan"),
    True,
    "\ud800",
]


def field_mutations(seed: dict[str, Any], limit: int = 4) -> Iterator[Any]:
    """``seed`` with each field (up to ``limit`` keys down) deleted, and set to each of
    :data:`WRONG_VALUES` and to a value nested 300 levels deep, in turn."""
    deep = nested(300)
    for path in list(_paths(seed, limit))[1:]:
        yield _replaced(seed, path, None, delete=True)
        for wrong in [*WRONG_VALUES, deep]:
            yield _replaced(seed, path, wrong, delete=False)


def events(seeds: list[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """One parsed event: a real one, a mutated one, or any JSON at all."""
    return st.one_of(st.sampled_from(seeds), mutated(seeds), wild_values)


# -- lines -----------------------------------------------------------------------------


def dumps(value: Any) -> bytes:
    """One JSON line as an agent could print it: escapes for surrogates, ``NaN`` and
    ``Infinity`` kept; values too deep for json.dumps are written by hand."""
    try:
        return json.dumps(value).encode("ascii")
    except (RecursionError, ValueError):
        return b"[" * 2000 + b"]" * 2000


GARBAGE_LINES = [
    b"",
    b"   ",
    b"not json at all",
    b"\xff\xfe\xfd",
    b"\xc3",  # a truncated UTF-8 sequence
    b"\xed\xa0\x80",  # a surrogate encoded as UTF-8 (invalid)
    b'{"type": "result", "result": "\xed\xa0\x80"}',
    b'"\\ud800"',
    b'{"type": "\\ud800", "\\udfff": "\\ud83d"}',
    b"1e400",
    b"-1e400",
    b"NaN",
    b"Infinity",
    b"9" * 5000,  # more digits than json.loads takes
    b"9" * 4000,
    b'{"n": ' + b"9" * 4000 + b"}",
    b"[" * 2000 + b"]" * 2000,
    b'{"a":' * 2000 + b"1" + b"}" * 2000,
    b"[" * 150 + b"]" * 150,
    b"[" * 300 + b"]" * 300,
    b"{",
    b"}",
    b'{"type":',
    b"null",
    b"[]",
    b"{}",
    b"true",
    b"\x00\x00",
    b"\r",
    b'{"type": "result"}\r',
]
garbage = st.one_of(st.sampled_from(GARBAGE_LINES), st.binary(max_size=40))


@st.composite
def truncated(draw: st.DrawFn, line: bytes) -> bytes:
    return line[: draw(st.integers(0, max(len(line) - 1, 0)))]


def lines(seeds: list[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    """One stdout line: a real event, a mutated one, a truncated one, or garbage."""
    real = st.sampled_from([dumps(s) for s in seeds])
    return st.one_of(
        real,
        st.builds(dumps, events(seeds)),
        real.flatmap(truncated),
        garbage,
    )


@st.composite
def streams(draw: st.DrawFn, seeds: list[dict[str, Any]], max_lines: int = 25) -> bytes:
    """A whole stdout: real events reordered, duplicated or dropped, mixed with mutated
    events and garbage; ``\\n`` or ``\\r\\n`` endings, maybe no final newline."""
    base = [dumps(s) for s in seeds]
    picked = draw(st.permutations(base))
    picked = picked[: draw(st.integers(0, len(picked)))]
    extra = draw(st.lists(lines(seeds), max_size=max_lines))
    body = list(picked) + extra
    order = draw(st.permutations(range(len(body))))
    chosen = [body[i] for i in order]
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    tail = draw(st.sampled_from([b"", newline]))
    return newline.join(chosen) + tail


# -- checks ----------------------------------------------------------------------------


def assert_valid_transcript(transcript: Transcript) -> None:
    """It serializes to JSON (UTF-8) and that JSON reads back as a transcript."""
    text = transcript.model_dump_json(by_alias=True, indent=2)
    text.encode("utf-8")
    again = Transcript.model_validate_json(text)
    assert len(again.entries) == len(transcript.entries)
    if transcript.cost_usd is not None:
        assert math.isfinite(transcript.cost_usd) and transcript.cost_usd >= 0


def assert_writable(raw_output: list[str]) -> None:
    """The raw output can be written as UTF-8 (``raw.ndjson``/``raw.txt``)."""
    for line in raw_output:
        line.encode("utf-8")


class Notes:
    """A :class:`~axis_eval.adapters.supervision.RunNotes` that keeps everything."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def warn(self, key: str, message: str) -> bool:
        self.items.append((key, message))
        return sum(1 for k, _ in self.items if k == key) <= 10

    def output_grew(self) -> None:
        pass

    def kinds(self) -> set[str]:
        return {key for key, _ in self.items}


CRASH_KEYS = {"on_line errors", "on_end errors", "on_chunk errors", "get_result"}
"""Warning keys a stream reader uses only when an adapter callback raised."""


def assert_no_crash(notes: Notes) -> None:
    crashes = [m for k, m in notes.items if k in CRASH_KEYS]
    assert not crashes, crashes


def builder() -> TranscriptBuilder:
    b = TranscriptBuilder("fuzz")
    b.user("do it")
    return b


def adapter_input(tmp: str, **agent: Any) -> AdapterInput:
    from axis_eval.planning.models import AgentSpec

    return AdapterInput(
        prompt="do it",
        agent=AgentSpec(name="fuzz", adapter=agent.pop("adapter", "fuzz"), **agent),
        workspace=tmp,
        home=tmp,
        env={"HOME": tmp, "PATH": "/usr/bin:/bin"},
        time_limit_s=30,
    )


# -- bounds ----------------------------------------------------------------------------

_CI_EXAMPLES = 60
"""The default ("ci") profile's examples per test (tests/conftest.py)."""


def examples(count: int) -> settings:
    """``count`` examples under the default profile, to keep this area's fuzzing to a few
    seconds; a profile that asks for more (``HYPOTHESIS_PROFILE=long``) gets its own count."""
    wanted = settings.default.max_examples
    return settings(max_examples=count if wanted <= _CI_EXAMPLES else wanted)


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail (TimeoutError) when the block runs longer than ``seconds``: a parser that hangs
    on an input fails its example instead of stalling the suite. Main thread only;
    pytest-timeout's own alarm, if any, is put back afterwards."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"a parser ran longer than {seconds}s")

    old_handler = signal.signal(signal.SIGALRM, expired)
    old_delay, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_delay > 0:
            left = old_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))


def run_async(coro: Any, seconds: float = 10.0) -> Any:
    """``asyncio.run`` with a time limit: a reader that never ends fails the example."""
    return asyncio.run(asyncio.wait_for(coro, seconds))


# -- a process that is only its output -------------------------------------------------


class FakeProcess:
    """A :class:`~axis_eval.execute.process.ManagedProcess` that printed ``stdout`` and
    exited: the supervisor's whole path (reader, warnings, finish) without a CLI."""

    def __init__(self, stdout: bytes, returncode: int = 0, stderr: bytes = b"") -> None:
        self.stdout = asyncio.StreamReader()
        self.stdout.feed_data(stdout)
        self.stdout.feed_eof()
        self.stderr = asyncio.StreamReader()
        self.stderr.feed_data(stderr)
        self.stderr.feed_eof()
        self.stdin: asyncio.StreamWriter | None = None
        self.returncode: int | None = returncode
        self.exited = True
        self.spec: ProcessSpec | None = None

    def add_exit_callback(self, callback: Callable[[], object]) -> None:
        asyncio.get_running_loop().call_soon(callback)

    async def wait(self) -> int:
        return self.returncode or 0

    async def stop(self, grace_s: float = 5.0) -> None:
        pass


def fake_spawner(stdout: bytes, returncode: int = 0) -> Callable[[ProcessSpec], Any]:
    async def spawn(spec: ProcessSpec) -> FakeProcess:
        proc = FakeProcess(stdout, returncode)
        proc.spec = spec
        return proc

    return spawn
