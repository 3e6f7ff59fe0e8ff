// axis-eval's own stand-in for the "@netlify/axis" package, written from AXIS's documented
// adapter contract: createAgentAdapter(spec) and createAcpBasedAdapter(spec) keep the spec
// for the axis-eval Node host, which runs its callbacks; the process itself is started and
// supervised by axis-eval (Python).
"use strict";

const SPEC = Symbol.for("axis-eval.adapter-spec");

function fail(message) {
  throw new TypeError(message);
}

function checkCommon(factory, spec) {
  if (spec === null || typeof spec !== "object") fail(`${factory}: the spec must be an object`);
  if (typeof spec.name !== "string" || !spec.name.trim()) {
    fail(`${factory}: name must be a non-empty string`);
  }
  for (const key of ["isolationEnv", "prepare", "hasLocalSession", "buildArgs"]) {
    if (spec[key] !== undefined && typeof spec[key] !== "function") {
      fail(`${factory}: ${key} must be a function`);
    }
  }
}

function hosted(kind, spec) {
  const adapter = {
    name: spec.name,
    run() {
      throw new Error(
        `the ${spec.name} adapter runs inside axis-eval, which starts and reads the agent itself`,
      );
    },
  };
  if (typeof spec.isolationEnv === "function") adapter.isolationEnv = spec.isolationEnv;
  if (typeof spec.hasLocalSession === "function") adapter.hasLocalSession = spec.hasLocalSession;
  adapter.requiredEnv = () =>
    typeof spec.requiredEnv === "function" ? spec.requiredEnv() : [...(spec.requiredEnv || [])];
  Object.defineProperty(adapter, SPEC, { value: { kind, spec }, enumerable: false });
  return adapter;
}

function createAgentAdapter(spec) {
  checkCommon("createAgentAdapter", spec);
  if (typeof spec.buildArgs !== "function") fail("createAgentAdapter: buildArgs must be a function");
  if (typeof spec.initialState !== "function") {
    fail("createAgentAdapter: initialState must be a function");
  }
  if (typeof spec.getResult !== "function") fail("createAgentAdapter: getResult must be a function");
  const stream = spec.streamConfig;
  if (stream === null || typeof stream !== "object") {
    fail("createAgentAdapter: streamConfig must be {mode: 'lines' | 'aggregate', ...}");
  }
  if (stream.mode === "lines") {
    if (typeof stream.onLine !== "function") fail("createAgentAdapter: streamConfig.onLine must be a function");
  } else if (stream.mode === "aggregate") {
    if (typeof stream.onChunk !== "function") fail("createAgentAdapter: streamConfig.onChunk must be a function");
  } else {
    fail(`createAgentAdapter: streamConfig.mode must be "lines" or "aggregate", got ${JSON.stringify(stream.mode)}`);
  }
  if (spec.promptVia !== undefined && spec.promptVia !== "argv" && spec.promptVia !== "stdin") {
    fail(`createAgentAdapter: promptVia must be "argv" or "stdin", got ${JSON.stringify(spec.promptVia)}`);
  }
  return hosted("agent", spec);
}

function createAcpBasedAdapter(spec) {
  checkCommon("createAcpBasedAdapter", spec);
  if (spec.extractUsage !== undefined && typeof spec.extractUsage !== "function") {
    fail("createAcpBasedAdapter: extractUsage must be a function");
  }
  return hosted("acp", spec);
}

module.exports = { createAgentAdapter, createAcpBasedAdapter, SPEC };
