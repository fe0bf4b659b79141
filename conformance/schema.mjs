// Schema oracle: validates every message the AGENT sends against the ACP v1
// JSON Schema shipped inside @agentclientprotocol/sdk (schema/v1/schema.json).
//
// The validator is deliberately independent of the SDK's own (zod) parsing:
// it sees the messages exactly as they came off the wire.

import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const require = createRequire(import.meta.url);

/** Absolute path of the schema inside the installed SDK package. */
export const SCHEMA_PATH = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json");

/** The stable schema plus the unstable types (subagent sessions, plan operations, fork). */
export const UNSTABLE_SCHEMA_PATH = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.unstable.json");

/** The schema has no `$id`; we give it one so `<id>#/$defs/X` refs resolve. */
export const SCHEMA_ID = "https://agentclientprotocol.com/schema/v1/schema.json";
const UNSTABLE_SCHEMA_ID = "https://agentclientprotocol.com/schema/v1/schema.unstable.json";

// Responses the agent sends, keyed by the method of the client request they answer.
export const RESPONSE_DEFS = {
  initialize: "InitializeResponse",
  authenticate: "AuthenticateResponse",
  logout: "LogoutResponse",
  "session/new": "NewSessionResponse",
  "session/load": "LoadSessionResponse",
  "session/list": "ListSessionsResponse",
  "session/delete": "DeleteSessionResponse",
  "session/resume": "ResumeSessionResponse",
  "session/close": "CloseSessionResponse",
  "session/prompt": "PromptResponse",
  "session/set_mode": "SetSessionModeResponse",
  "session/set_config_option": "SetSessionConfigOptionResponse",
};

// Responses only the unstable schema has.
const UNSTABLE_RESPONSE_DEFS = { ...RESPONSE_DEFS, "session/fork": "ForkSessionResponse" };

// Requests the agent may send to the client (params shape).
export const AGENT_REQUEST_DEFS = {
  "session/request_permission": "RequestPermissionRequest",
  "fs/read_text_file": "ReadTextFileRequest",
  "fs/write_text_file": "WriteTextFileRequest",
  "terminal/create": "CreateTerminalRequest",
  "terminal/output": "TerminalOutputRequest",
  "terminal/release": "ReleaseTerminalRequest",
  "terminal/wait_for_exit": "WaitForTerminalExitRequest",
  "terminal/kill": "KillTerminalRequest",
  "elicitation/create": "CreateElicitationRequest",
};

// Notifications the agent may send to the client (params shape).
export const AGENT_NOTIFICATION_DEFS = {
  "session/update": "SessionNotification",
  "elicitation/complete": "CompleteElicitationNotification",
};

// The schema annotates numbers with Rust-ish formats; enforce their ranges.
const intRange = (min, max) => ({
  type: "number",
  validate: (n) => Number.isInteger(n) && n >= min && n <= max,
});
const NUMBER_FORMATS = {
  int32: intRange(-(2 ** 31), 2 ** 31 - 1),
  uint16: intRange(0, 2 ** 16 - 1),
  uint32: intRange(0, 2 ** 32 - 1),
  int64: intRange(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
  uint64: intRange(0, Number.MAX_SAFE_INTEGER),
  double: { type: "number", validate: (n) => Number.isFinite(n) },
};

const cached = new Map();

/**
 * Returns the shared Ajv instance with the whole ACP schema added once: the
 * stable schema.json, or with `unstable` schema.unstable.json (what a client
 * that advertises unstable capabilities, such as subagents or plan, accepts).
 */
export function schemaValidator(unstable = false) {
  if (cached.has(unstable)) return cached.get(unstable);
  const schema = JSON.parse(readFileSync(unstable ? UNSTABLE_SCHEMA_PATH : SCHEMA_PATH, "utf8"));
  const id = unstable ? UNSTABLE_SCHEMA_ID : SCHEMA_ID;
  schema.$id = id;
  const ajv = new Ajv2020({ strict: false, allErrors: true, discriminator: true });
  addFormats(ajv);
  for (const [name, fmt] of Object.entries(NUMBER_FORMATS)) ajv.addFormat(name, fmt);
  ajv.addSchema(schema);
  const fns = new Map();
  const get = (def) => {
    let fn = fns.get(def);
    if (!fn) {
      fn = ajv.getSchema(`${id}#/$defs/${def}`);
      if (!fn) throw new Error(`schema has no $defs/${def}`);
      fns.set(def, fn);
    }
    return fn;
  };
  /** Validate `value` against `$defs/<def>`; returns [] or a list of Ajv errors. */
  const check = (def, value) => {
    const fn = get(def);
    return fn(value) ? [] : [...fn.errors];
  };
  const v = { ajv, schema, check, get };
  cached.set(unstable, v);
  return v;
}

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isId = (v) => typeof v === "string" || Number.isInteger(v) || v === null;

/**
 * Validates one message the agent sent.
 *
 * @param msg the parsed JSON message
 * @param methodForId (id) => method of the client request with that id, or undefined
 * @param o.unstable validate against schema.unstable.json instead of schema.json
 * @returns a list of problems: [{ def, message, errors }]; empty when conformant.
 */
export function validateAgentMessage(msg, methodForId, { unstable = false } = {}) {
  const { check } = schemaValidator(unstable);
  const problems = [];
  const bad = (def, message, errors = []) => problems.push({ def, message, errors });

  if (!isObj(msg)) {
    bad("envelope", "message is not a JSON object");
    return problems;
  }
  if (msg.jsonrpc !== "2.0") bad("envelope", `jsonrpc must be "2.0", got ${JSON.stringify(msg.jsonrpc)}`);

  const hasMethod = "method" in msg;
  const hasId = "id" in msg;

  if (hasMethod) {
    if (typeof msg.method !== "string") {
      bad("envelope", "method must be a string");
      return problems;
    }
    if ("result" in msg || "error" in msg) bad("envelope", "a request/notification must not carry result or error");
    if (hasId) {
      // agent -> client request
      if (msg.id === null || !isId(msg.id)) bad("RequestId", `request id must be a string or integer, got ${JSON.stringify(msg.id)}`);
      const def = AGENT_REQUEST_DEFS[msg.method];
      if (def) {
        const errs = check(def, msg.params);
        if (errs.length) bad(def, `${msg.method} params do not match $defs/${def}`, errs);
      } else if (!msg.method.startsWith("_")) {
        bad("AgentRequest", `agent sent a request for unknown client method ${JSON.stringify(msg.method)}`);
      }
    } else {
      const def = AGENT_NOTIFICATION_DEFS[msg.method];
      if (def) {
        const errs = check(def, msg.params);
        if (errs.length) bad(def, `${msg.method} params do not match $defs/${def}`, errs);
      } else if (msg.method === "$/cancel_request") {
        const errs = check("CancelRequestNotification", msg.params);
        if (errs.length) bad("CancelRequestNotification", "$/cancel_request params invalid", errs);
      } else if (!msg.method.startsWith("_")) {
        bad("AgentNotification", `agent sent a notification with unknown method ${JSON.stringify(msg.method)}`);
      }
    }
    return problems;
  }

  // Response.
  if (!hasId) {
    bad("envelope", "message has neither method nor id");
    return problems;
  }
  if (!isId(msg.id)) bad("RequestId", `response id must be string, integer or null, got ${JSON.stringify(msg.id)}`);
  const hasResult = "result" in msg;
  const hasError = "error" in msg;
  if (hasResult === hasError) {
    bad("envelope", "a response must carry exactly one of result / error");
    return problems;
  }
  if (hasError) {
    const errs = check("Error", msg.error);
    if (errs.length) bad("Error", "error object does not match $defs/Error", errs);
    return problems;
  }
  const method = methodForId(msg.id);
  if (method === undefined) {
    bad("envelope", `response to unknown request id ${JSON.stringify(msg.id)}`);
    return problems;
  }
  const def = (unstable ? UNSTABLE_RESPONSE_DEFS : RESPONSE_DEFS)[method];
  if (def) {
    const errs = check(def, msg.result);
    if (errs.length) bad(def, `result for ${method} does not match $defs/${def}`, errs);
  }
  return problems;
}

/** Human-readable rendering of problems for assertion messages. */
export function formatProblems(entries, max = 8) {
  const more = entries.length > max ? `\n  ... and ${entries.length - max} more offending message(s)` : "";
  return entries
    .slice(0, max)
    .map(({ msg, problems }, i) => {
      const lines = problems.map((p) => {
        const errs = p.errors
          .slice(0, 12)
          .map((e) => `      - ${e.instancePath || "(root)"} ${e.message}${e.params ? " " + JSON.stringify(e.params) : ""} [${e.schemaPath}]`)
          .join("\n");
        return `    * [${p.def}] ${p.message}${errs ? "\n" + errs : ""}${p.errors.length > 12 ? `\n      ... ${p.errors.length - 12} more` : ""}`;
      });
      return `  #${i + 1} agent sent: ${truncate(JSON.stringify(msg), 1500)}\n${lines.join("\n")}`;
    })
    .join("\n") + more;
}

export function truncate(s, n) {
  return s.length > n ? s.slice(0, n) + `…(${s.length - n} more chars)` : s;
}
