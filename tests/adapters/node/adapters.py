"""The adapter sources of the JavaScript/TypeScript adapter tests, and their Python twins.

Each JavaScript/TypeScript adapter is written as an AXIS user writes one (``createAgentAdapter``
/ ``createAcpBasedAdapter`` from ``@netlify/axis``, AXIS's transcript entries); its twin is
the same adapter written in Python with ``create_agent_adapter``. ``{agent}`` and
``{python}`` are filled in with the test agent and this interpreter.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
STREAM_AGENT = REPO / "tests" / "agents" / "axis_stream.py"
ACP_AGENT = REPO / "tests" / "adapters" / "acp" / "fake_acp_agent.py"


def fill(source: str) -> str:
    """``source`` with ``{{python}}``/``{{agent}}``/``{{acp_agent}}`` as JSON strings."""
    return (
        source.replace("{{python}}", json.dumps(sys.executable))
        .replace("{{agent}}", json.dumps(str(STREAM_AGENT)))
        .replace("{{acp_agent}}", json.dumps(str(ACP_AGENT)))
    )


LINES_JS = """\
import { createAgentAdapter } from "@netlify/axis";

const stamp = () => new Date().toISOString();

export default createAgentAdapter({
  name: "stream-lines",
  resolveCommand: (input, resolved) => ({ command: {{python}}, prefixArgs: [{{agent}}, "lines"] }),
  buildArgs: (input) => [input.prompt],
  initialState: () => ({ answer: null, usage: null }),
  streamConfig: {
    mode: "lines",
    onLine(line, ctx) {
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        return; // progress text: not an event
      }
      console.log("onLine saw", line.slice(0, 20)); // the adapter's own noise
      process.stdout.write('{"id": 1, "ok": true, "garbage": ');
      if (event.kind === "say") {
        const content = { text: event.text };
        ctx.transcript.push({ type: "assistant", timestamp: stamp(), content });
        ctx.feedAssistantText(event.text);
      } else if (event.kind === "tool") {
        ctx.transcript.push({
          type: "tool_use",
          timestamp: stamp(),
          content: { tool_name: event.name, tool_id: event.id, parameters: event.input },
        });
      } else if (event.kind === "tool_done") {
        ctx.transcript.push({
          type: "tool_result",
          timestamp: stamp(),
          content: { tool_id: event.id, output: event.output, is_error: event.failed },
        });
      } else if (event.kind === "done") {
        ctx.state.answer = event.answer;
        ctx.state.usage = { input: event.tokens.in, output: event.tokens.out };
      }
    },
  },
  getResult: (ctx) => ({
    result: ctx.state.answer,
    metadata: { tokenUsage: ctx.state.usage, sessionId: "js-" + ctx.exitCode },
  }),
});
"""

LINES_PY = """\
import json

from axis_eval.adapters import (
    AdapterResult, LinesMode, TokenUsage, create_agent_adapter,
)


def on_line(event, ctx):
    kind = event.get("kind")
    if kind == "say":
        ctx.transcript.assistant(event["text"])
        ctx.feed_text(event["text"])
    elif kind == "tool":
        ctx.transcript.tool_call(event["name"], event["input"], id=event["id"])
    elif kind == "tool_done":
        ctx.transcript.tool_result(event["id"], event["output"], is_error=event["failed"])
    elif kind == "done":
        ctx.state["answer"] = event["answer"]
        ctx.state["usage"] = TokenUsage(input=event["tokens"]["in"], output=event["tokens"]["out"])


def get_result(ctx):
    return AdapterResult(
        result=ctx.state.get("answer"),
        usage=ctx.state.get("usage"),
        session_id=f"js-{ctx.exit_code}",
    )


adapter = create_agent_adapter(
    name="stream-lines-py",
    resolve_command=lambda inp: [{{python}}, {{agent}}, "lines"],
    build_args=lambda inp: [inp.prompt],
    initial_state=dict,
    stream=LinesMode(on_line=on_line),
    get_result=get_result,
)
"""

TEXT_TS = """\
import { createAgentAdapter } from "@netlify/axis";
import type { AgentAdapter } from "@netlify/axis";

interface State {
  text: string;
}

type Entry = { type: string; timestamp: string; content: Record<string, unknown> };

const at = (): string => new Date().toISOString();

const adapter: AgentAdapter = createAgentAdapter({
  name: "stream-text",
  cliCommand: {{python}},
  buildArgs: (): string[] => [{{agent}}, "text"],
  promptVia: "stdin",
  isolationEnv: ({ home }: { workspace: string; home: string }) => ({
    AXIS_STREAM_MARK: "isolated",
  }),
  initialState: (): State => ({ text: "" }),
  streamConfig: {
    mode: "aggregate",
    onChunk(chunk: string, ctx: { state: State }) {
      ctx.state.text += chunk;
    },
    onEnd(ctx: { state: State; transcript: Entry[] }) {
      let n = 0;
      for (const line of ctx.state.text.split("\\n")) {
        if (line.startsWith("TOOL: ")) {
          n += 1;
          const id = `tool-${n}`;
          const parameters = { command: line.slice(6) };
          const call = { tool_name: "shell", tool_id: id, parameters };
          ctx.transcript.push({ type: "tool_use", timestamp: at(), content: call });
          const done = { tool_id: id, output: "ok" };
          ctx.transcript.push({ type: "tool_result", timestamp: at(), content: done });
        } else if (line.trim() && !line.startsWith("ANSWER: ")) {
          const content = { text: line };
          ctx.transcript.push({ type: "assistant", timestamp: at(), content });
        }
      }
    },
  },
  getResult(ctx: { state: State; stderr: string; startTime: Date; endTime: Date }) {
    const answer = ctx.state.text.split("\\n").find((l) => l.startsWith("ANSWER: "));
    const ordered = ctx.endTime.getTime() >= ctx.startTime.getTime();
    return {
      result: answer ? answer.slice(8) : null,
      metadata: {
        totalCostUsd: ordered ? 0.25 : 99,
        error: ctx.stderr.includes("a note") ? undefined : "no stderr",
      },
    };
  },
});

export { adapter };
"""

TEXT_PY = """\
from axis_eval.adapters import AdapterResult, AggregateMode, create_agent_adapter


def on_chunk(chunk, ctx):
    ctx.state.append(chunk)


def on_end(ctx):
    n = 0
    for line in "".join(ctx.state).split("\\n"):
        if line.startswith("TOOL: "):
            n += 1
            ctx.transcript.tool_call("shell", {"command": line[6:]}, id=f"tool-{n}")
            ctx.transcript.tool_result(f"tool-{n}", "ok")
        elif line.strip() and not line.startswith("ANSWER: "):
            ctx.transcript.assistant(line)


def get_result(ctx):
    answers = [l for l in "".join(ctx.state).split("\\n") if l.startswith("ANSWER: ")]
    return AdapterResult(
        result=answers[0][8:] if answers else None,
        cost_usd=0.25,
        error=None if "a note" in ctx.stderr else "no stderr",
    )


adapter = create_agent_adapter(
    name="stream-text-py",
    resolve_command=lambda inp: [{{python}}],
    build_args=lambda inp: [{{agent}}, "text"],
    prompt_via="stdin",
    isolation_env=lambda workspace, home: {"AXIS_STREAM_MARK": "isolated"},
    initial_state=list,
    stream=AggregateMode(on_chunk=on_chunk, on_end=on_end),
    get_result=get_result,
)
"""

ACP_JS = """\
const { createAcpBasedAdapter } = require("@netlify/axis");

exports.adapter = createAcpBasedAdapter({
  name: "fake-acp-js",
  cliCommand: {{python}},
  buildArgs: () => [{{acp_agent}}],
  isolationEnv: ({ workspace, home }) => ({ FAKE_ACP_ISOLATED: home }),
});
"""

ACP_PY = """\
from axis_eval.adapters.acp import create_acp_adapter

adapter = create_acp_adapter(
    name="fake-acp-py",
    command=[{{python}}, {{acp_agent}}],
    isolation_env=lambda workspace, home: {"FAKE_ACP_ISOLATED": home},
)
"""

THROWING_JS = """\
import { createAgentAdapter } from "@netlify/axis";

export default createAgentAdapter({
  name: "thrower",
  resolveCommand: () => ({ command: {{python}}, prefixArgs: [{{agent}}, "lines"] }),
  buildArgs: (input) => [input.prompt],
  initialState: () => ({ seen: 0 }),
  streamConfig: {
    mode: "lines",
    onLine(line, ctx) {
      ctx.state.seen += 1;
      if (ctx.state.seen === 3) throw new RangeError("line three is cursed");
    },
  },
  getResult: (ctx) => ({ result: "never mind" }),
});
"""

HANGING_JS = """\
import { createAgentAdapter } from "@netlify/axis";

export default createAgentAdapter({
  name: "hanger",
  resolveCommand: () => ({ command: {{python}}, prefixArgs: [{{agent}}, "lines"] }),
  buildArgs: (input) => [input.prompt],
  initialState: () => ({}),
  streamConfig: { mode: "lines", onLine() { for (;;) {} } },
  getResult: () => ({ result: "unreachable" }),
});
"""

NO_ADAPTER_JS = """\
import { createAgentAdapter } from "@netlify/axis";

export const notAnAdapter = { name: "nope" };
export default 42;
"""

FAULTY_JS = """\
import { createAgentAdapter } from "@netlify/axis";

const fault = process.env.FAULT;
const boom = (where) => {
  if (fault === where) throw new TypeError(`${where} is broken`);
};

export default createAgentAdapter({
  name: "faulty",
  resolveCommand: () => (boom("resolveCommand"), { command: {{python}}, prefixArgs: [{{agent}}] }),
  buildArgs: (input) => (boom("buildArgs"), ["lines", input.prompt]),
  isolationEnv: () => (boom("isolationEnv"), { FAULTY: "1" }),
  prepare: async ({ env }) => {
    boom("prepare");
    env.FROM_PREPARE = "yes";
  },
  initialState: () => (boom("initialState"), {}),
  streamConfig: { mode: "lines", onLine() {}, onEnd: () => boom("onEnd") },
  getResult: () => (fault === "getResult" ? 7 : { result: "fine" }),
});
"""

SLOW_ONCE_JS = """\
import { createAgentAdapter } from "@netlify/axis";

export default createAgentAdapter({
  name: "slow-once",
  resolveCommand: () => ({ command: {{python}}, prefixArgs: [{{agent}}, "lines"] }),
  buildArgs: (input) => [input.prompt],
  initialState: () => ({ slept: false, answer: null }),
  streamConfig: {
    mode: "lines",
    onLine(line, ctx) {
      if (!ctx.state.slept) {
        ctx.state.slept = true;
        const until = Date.now() + 3000;
        while (Date.now() < until) {} // busy: the host answers nothing meanwhile
      }
      if (line.startsWith("{") && JSON.parse(line).kind === "done") {
        ctx.state.answer = JSON.parse(line).answer;
      }
    },
  },
  getResult: (ctx) => ({ result: ctx.state.answer }),
});
"""

_PACE = (
    "import runpy, sys, time; time.sleep(1); sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0])"
)
PACED_JS = LINES_JS.replace(
    'prefixArgs: [{{agent}}, "lines"]',
    f'prefixArgs: ["-c", {json.dumps(_PACE)}, {{{{agent}}}}, "lines"]',
)
"""``LINES_JS`` with an agent that waits a second before it starts printing."""
assert PACED_JS != LINES_JS

SLOW_HOOKS_JS = """\
import { createAgentAdapter } from "@netlify/axis";

const busy = (ms) => {
  const until = Date.now() + ms;
  while (Date.now() < until) {} // the host answers nothing meanwhile
};
const SLOW = Number(process.env.SLOW_MS);

export default createAgentAdapter({
  name: "slow-hooks",
  isolationEnv: () => (busy(SLOW), { SLOW_HOOKS: "1" }),
  resolveCommand: () => (busy(SLOW), { command: {{python}}, prefixArgs: [{{agent}}] }),
  buildArgs: (input) => (busy(SLOW), ["lines", input.prompt]),
  prepare: async () => busy(SLOW),
  initialState: () => (busy(SLOW), { lines: 0 }),
  streamConfig: {
    mode: "lines",
    onLine(line, ctx) {
      busy(SLOW);
      ctx.state.lines += 1;
    },
    onEnd: () => busy(SLOW),
  },
  getResult: (ctx) => (busy(SLOW), { result: `${ctx.state.lines} lines` }),
});
"""
