// axis-eval's Node host for AXIS-style custom adapters (createAgentAdapter /
// createAcpBasedAdapter from "@netlify/axis"). Python starts and supervises the agent; this
// process only runs the adapter's callbacks. Requests arrive on stdin, one JSON object a
// line: {id, op, ...}; each answer goes to the reply descriptor (argv[2]) as one line:
// {id, ok, value?, error?, where?, entries, fed}. `entries` are the transcript entries the
// adapter pushed since the last answer, `fed` the characters given to feedAssistantText.
// It exits when stdin closes.
//
//   node [--import <ts loader>] host.mjs <reply fd> <adapter module> <config key>
import fs from "node:fs";
import Module, { register } from "node:module";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const [replyFd, modulePath, configKey] = process.argv.slice(2).map((a, i) => (i ? a : Number(a)));
const here = path.dirname(fileURLToPath(import.meta.url));
const shimCjs = path.join(here, "shim.cjs");
register("./hooks.mjs", import.meta.url, {
  data: { shimUrl: pathToFileURL(path.join(here, "shim.mjs")).href },
});
// require("@netlify/axis") from a CommonJS adapter: the same shim.
const originalResolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === "@netlify/axis" || request.startsWith("@netlify/axis/")) return shimCjs;
  return originalResolve.call(this, request, ...rest);
};
const require = Module.createRequire(import.meta.url);
const { SPEC } = require(shimCjs);

function reply(message) {
  const data = Buffer.from(JSON.stringify(message) + "\n");
  let done = 0;
  while (done < data.length) {
    try {
      done += fs.writeSync(replyFd, data, done);
    } catch (err) {
      if (err.code !== "EAGAIN") process.exit(3);
    }
  }
}

function describeError(err) {
  if (err instanceof Error) {
    const first = String(err.message || "").trim().split("\n")[0];
    return first ? `${err.name}: ${first}` : err.name;
  }
  try {
    return `thrown value: ${JSON.stringify(err) ?? String(err)}`;
  } catch {
    return `thrown value: ${String(err)}`;
  }
}

class CallbackError extends Error {
  constructor(where, cause, extra = {}) {
    super(describeError(cause));
    this.where = where;
    this.extra = extra;
  }
}

let spec;
let kind;
let ctx = null;
let sent = 0;
let fed = 0;

async function call(where, fn, ...args) {
  try {
    return await fn(...args);
  } catch (err) {
    throw new CallbackError(where, err);
  }
}

function newEntries() {
  const list = ctx ? ctx.transcript : [];
  if (!Array.isArray(list)) return [];
  const out = [];
  for (; sent < list.length; sent++) {
    try {
      out.push(JSON.parse(JSON.stringify(list[sent]) ?? "null"));
    } catch (err) {
      out.push({ type: "system", content: { text: `[entry not serializable: ${describeError(err)}]` } });
    }
  }
  return out;
}

function withCallbacks(input) {
  return {
    ...input,
    registerCleanup() {},
    onTokenProgress() {},
    onAgentReady() {},
  };
}

async function load() {
  let mod;
  try {
    mod = await import(pathToFileURL(modulePath).href);
  } catch (err) {
    return { ok: false, where: "import", error: describeError(err) };
  }
  const valid = (a) => a !== null && typeof a === "object" && typeof a.run === "function";
  const candidates = [mod.default, mod.adapter, mod.default?.default, mod.default?.adapter];
  const adapter = candidates.find(valid);
  if (!adapter) return { ok: false, where: "export" };
  const hostedSpec = adapter[SPEC];
  if (!hostedSpec) return { ok: false, where: "factory" };
  ({ spec, kind } = hostedSpec);
  let requiredEnv = [];
  let localSession = false;
  try {
    requiredEnv = await adapter.requiredEnv();
    if (typeof spec.hasLocalSession === "function") localSession = Boolean(await spec.hasLocalSession());
  } catch (err) {
    return { ok: false, where: "requiredEnv", error: describeError(err) };
  }
  const stream = spec.streamConfig || {};
  return {
    ok: true,
    value: {
      kind,
      name: spec.name,
      mode: kind === "agent" ? stream.mode : null,
      promptVia: spec.promptVia ?? "argv",
      requiredEnv,
      localSession,
      timeoutMs: spec.timeoutMs ?? null,
      cliCommand: typeof spec.cliCommand === "string" ? spec.cliCommand : spec.cliCommand?.command ?? null,
      has: {
        isolationEnv: typeof spec.isolationEnv === "function",
        prepare: typeof spec.prepare === "function",
        resolveCommand: typeof spec.resolveCommand === "function",
        buildArgs: typeof spec.buildArgs === "function",
        onEnd: typeof stream.onEnd === "function",
        extractUsage: typeof spec.extractUsage === "function",
      },
    },
  };
}

function startCtx(state) {
  ctx = {
    state,
    transcript: [],
    feedAssistantText(text) {
      fed += String(text ?? "").length;
    },
  };
  sent = 0;
}

const ops = {
  async isolationEnv(req) {
    return call("isolationEnv", spec.isolationEnv, { workspace: req.workspace, home: req.home });
  },
  async command(req) {
    const input = withCallbacks(req.input);
    const cli = typeof spec.cliCommand === "string" ? spec.cliCommand : spec.cliCommand?.command;
    const resolved = cli ? { command: cli, prefixArgs: [] } : undefined;
    if (typeof spec.resolveCommand === "function") {
      return call("resolveCommand", spec.resolveCommand, input, resolved);
    }
    return resolved ?? null;
  },
  async args(req) {
    if (typeof spec.buildArgs !== "function") return [];
    return call("buildArgs", spec.buildArgs, withCallbacks(req.input));
  },
  async prepare(req) {
    const env = { ...req.env };
    const input = withCallbacks({ ...req.input, env });
    await call("prepare", spec.prepare, {
      input,
      workingDirectory: req.input.workingDirectory,
      homeDirectory: req.input.homeDirectory,
      env,
    });
    return env;
  },
  async extractUsage(req) {
    return (await call("extractUsage", spec.extractUsage, req.response)) ?? null;
  },
  async start() {
    startCtx(await call("initialState", spec.initialState));
    return null;
  },
  async lines(req) {
    const onLine = spec.streamConfig.onLine;
    for (let i = 0; i < req.texts.length; i++) {
      try {
        await onLine(req.texts[i], ctx);
      } catch (err) {
        throw new CallbackError("onLine", err, { done: i });
      }
    }
    return req.texts.length;
  },
  async chunk(req) {
    await call("onChunk", spec.streamConfig.onChunk, req.text, ctx);
    return null;
  },
  async end() {
    if (typeof spec.streamConfig.onEnd === "function") await call("onEnd", spec.streamConfig.onEnd, ctx);
    return null;
  },
  async result(req) {
    const result = await call("getResult", spec.getResult, {
      state: ctx.state,
      transcript: ctx.transcript,
      exitCode: req.exitCode,
      stderr: req.stderr,
      startTime: new Date(req.startTime),
      endTime: new Date(req.endTime),
    });
    return result ?? null;
  },
};

async function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    reply({ id: null, ok: false, where: "protocol", error: "a request is not JSON" });
    return;
  }
  const op = ops[req.op];
  let message;
  try {
    if (!op) throw new CallbackError("protocol", new Error(`unknown op ${req.op}`));
    const value = await op(req);
    message = { id: req.id, ok: true, value: value === undefined ? null : value };
  } catch (err) {
    const where = err instanceof CallbackError ? err.where : req.op;
    const extra = err instanceof CallbackError ? err.extra : {};
    message = { id: req.id, ok: false, where, error: err instanceof CallbackError ? err.message : describeError(err), ...extra };
  }
  message.entries = newEntries();
  message.fed = fed;
  fed = 0;
  try {
    reply(message);
  } catch (err) {
    reply({ id: req.id, ok: false, where: req.op, error: `the answer is not JSON: ${describeError(err)}`, entries: [], fed: 0 });
  }
}

process.on("uncaughtException", (err) => console.error(`axis-eval node host: ${describeError(err)}`));
process.on("unhandledRejection", (err) => console.error(`axis-eval node host: ${describeError(err)}`));

const loaded = await load();
reply({ id: 0, ...loaded, configKey });
let chain = Promise.resolve();
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  chain = chain.then(() => handle(line));
});
rl.on("close", () => {
  chain.then(() => process.exit(0));
});
