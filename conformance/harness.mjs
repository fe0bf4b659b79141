// Harness: spawns `$PIXIR_BIN acp --script <file>`, talks to it with the
// official ACP TypeScript client (SDK 2.4.0, 2.x app builder API), taps the raw
// wire in both directions and validates every message the agent sends against
// the SDK's own ACP v1 JSON Schema.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
// The same client with the unstable types (subagent sessions, plan
// operations, fork), for connections that advertise them.
import * as acpUnstable from "@agentclientprotocol/sdk/unstable";
import { validateAgentMessage, formatProblems, truncate } from "./schema.mjs";

export { acp, acpUnstable };

// These bounds only turn a hang into a failure with diagnostics; they are not
// timing targets (those live in Go benchmarks). They are generous because the
// machines running the suite are shared and busy: a slow step must wait, not
// fail.
export const REQUEST_TIMEOUT_MS = 120_000;
export const TEST_TIMEOUT_MS = 300_000;

/** Absolute path of the binary under test, or a clear failure. */
export function pixirBin() {
  const bin = process.env.PIXIR_BIN;
  if (!bin) {
    throw new Error(
      "PIXIR_BIN is not set. Build the agent and point PIXIR_BIN at it, e.g.\n" +
        "  cd /work/main && go build -o /tmp/pixir-conf/pixir ./cmd/pixir\n" +
        "  cd conformance && PIXIR_BIN=/tmp/pixir-conf/pixir npm test",
    );
  }
  if (!bin.startsWith("/")) throw new Error(`PIXIR_BIN must be an absolute path, got ${JSON.stringify(bin)}`);
  if (!existsSync(bin)) throw new Error(`PIXIR_BIN=${bin} does not exist (build it with: go build -o ${bin} ./cmd/pixir)`);
  if (!statSync(bin).isFile()) throw new Error(`PIXIR_BIN=${bin} is not a regular file`);
  return bin;
}

/**
 * A fresh sandbox: `workspace` (the session cwd), `home` (PIXIR_HOME) and a
 * private HOME/XDG tree, all under one temp root removed by `cleanup()`.
 */
export function makeSandbox(prefix = "pixir-conf-") {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const workspace = join(root, "workspace");
  const home = join(root, "pixir-home");
  const userHome = join(root, "user-home");
  for (const d of [workspace, home, userHome]) mkdirSync(d, { recursive: true });
  let n = 0;
  return {
    root,
    workspace,
    home,
    userHome,
    /** Writes a TOML script for the scripted provider (outside the workspace); returns its path. */
    script(toml) {
      const p = join(root, `script-${++n}.toml`);
      writeFileSync(p, toml);
      return p;
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** An editor's fs/read_text_file: the file's text, or `limit` lines of it from `line` (1-based). */
export async function readFileLines(params) {
  const fs = await import("node:fs/promises");
  let text = await fs.readFile(params.path, "utf8");
  if (params.line != null || params.limit != null) {
    const lines = text.split("\n");
    const start = Math.max(0, (params.line ?? 1) - 1);
    const end = params.limit != null ? start + params.limit : lines.length;
    text = lines.slice(start, end).join("\n") + (end < lines.length ? "\n" : "");
  }
  return { content: text };
}

/** An editor's fs/write_text_file (it makes missing directories, as editors do). */
export async function writeFile(params) {
  const fs = await import("node:fs/promises");
  const { dirname } = await import("node:path");
  await fs.mkdir(dirname(params.path), { recursive: true });
  await fs.writeFile(params.path, params.content);
  return {};
}

/** Default permission policy: pick the `allow_once` option. */
export function selectKind(kind) {
  return (params) => {
    const opt = params.options.find((o) => o.kind === kind);
    return opt ? { outcome: { outcome: "selected", optionId: opt.optionId } } : { outcome: { outcome: "cancelled" } };
  };
}
export const allowOnce = selectKind("allow_once");

/** How long to let in-flight notifications settle after a response. */
const SETTLE_MS = 100;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function deferred() {
  let resolve, reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * One `pixir acp` process plus an ACP client connection to it.
 */
export class AgentProcess {
  /**
   * @param {object} o
   * @param {string} o.scriptPath TOML script for `--script`
   * @param {ReturnType<typeof makeSandbox>} o.sandbox
   * @param {(params) => any} [o.permission] permission policy (default allow_once)
   * @param {string[]} [o.extraArgs]
   * @param {object} [o.env] extra env for the child
   */
  static async start(o) {
    const a = new AgentProcess(o);
    await a.#connected.promise;
    return a;
  }

  /** Every message on the wire, in order: {seq, dir: "agent"|"client", msg}. */
  wire = [];
  /** Violations found on agent messages: {msg, problems}. */
  violations = [];
  /** session/update params delivered by the SDK client, per sessionId, in order. */
  updatesBySession = new Map();
  /** session/request_permission requests: {seq, params, response}. */
  permissionRequests = [];
  /** The permission policy; tests may replace it at any time. */
  permission = allowOnce;
  stderr = "";
  exit = null; // {code, signal} once the child exited

  #seq = 0;
  #clientRequestMethods = new Map(); // id -> method for requests the client sent
  #connected = deferred();
  #done = deferred();
  #exited = deferred();
  #connection; // promise from connectWith
  #stdoutBuf = "";

  /** fs/read_text_file and fs/write_text_file as seen by the agent: {method, params, response|error}. */
  fsCalls = [];

  constructor({ scriptPath, sandbox, permission, extraArgs = [], env = {}, readTextFile, writeTextFile, unstable = false }) {
    // unstable: the client is the SDK's unstable one, and every agent
    // message is judged by schema.unstable.json.
    this.unstable = unstable;
    const sdk = unstable ? acpUnstable : acp;
    const bin = pixirBin();
    this.sandbox = sandbox;
    if (permission) this.permission = permission;
    this.args = ["acp", "--script", scriptPath, ...extraArgs];
    this.child = spawn(bin, this.args, {
      cwd: sandbox.workspace,
      stdio: ["pipe", "pipe", "pipe"],
      env: {
        ...process.env,
        PIXIR_HOME: sandbox.home,
        HOME: sandbox.userHome,
        XDG_CONFIG_HOME: join(sandbox.userHome, ".config"),
        XDG_DATA_HOME: join(sandbox.userHome, ".local/share"),
        XDG_STATE_HOME: join(sandbox.userHome, ".local/state"),
        XDG_CACHE_HOME: join(sandbox.userHome, ".cache"),
        ...env,
      },
    });
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (d) => {
      this.stderr += d;
    });
    this.child.on("error", (err) => {
      this.stderr += `\n[harness] spawn error: ${err.message}`;
      this.#connected.reject(err);
      this.#exited.resolve();
    });
    this.child.on("exit", (code, signal) => {
      this.exit = { code, signal };
      this.#exited.resolve();
    });
    this.child.stdin.on("error", () => {}); // EPIPE after the child died

    // Raw stdout byte tap: stdout must carry only newline-delimited JSON-RPC.
    const decoder = new TextDecoder();
    const rawTap = new TransformStream({
      transform: (chunk, c) => {
        this.#stdoutBuf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = this.#stdoutBuf.indexOf("\n")) >= 0) {
          this.#checkRawLine(this.#stdoutBuf.slice(0, i));
          this.#stdoutBuf = this.#stdoutBuf.slice(i + 1);
        }
        c.enqueue(chunk);
      },
      flush: () => {
        if (this.#stdoutBuf.trim()) this.#checkRawLine(this.#stdoutBuf);
      },
    });
    const stdout = Readable.toWeb(this.child.stdout).pipeThrough(rawTap);
    const wire = sdk.ndJsonStream(Writable.toWeb(this.child.stdin), stdout);

    const tap = (dir) =>
      new TransformStream({
        transform: (msg, c) => {
          this.#record(dir, msg);
          c.enqueue(msg);
        },
      });
    const out = tap("client");
    out.readable.pipeTo(wire.writable).catch(() => {});
    const stream = { readable: wire.readable.pipeThrough(tap("agent")), writable: out.writable };

    const app = sdk
      .client({ name: "pixir-conformance" })
      .onNotification(sdk.methods.client.session.update, ({ params }) => {
        const list = this.updatesBySession.get(params.sessionId) ?? [];
        list.push(params.update);
        this.updatesBySession.set(params.sessionId, list);
      })
      .onRequest(sdk.methods.client.session.requestPermission, async ({ params, requestId }) => {
        const rec = { seq: this.#seqOfAgentRequest(requestId), params, response: undefined };
        this.permissionRequests.push(rec);
        rec.response = await this.permission(params);
        return rec.response;
      })
      .onRequest(sdk.methods.client.fs.readTextFile, ({ params }) => this.#recordFs("fs/read_text_file", params, readTextFile ?? readFileLines))
      .onRequest(sdk.methods.client.fs.writeTextFile, ({ params }) =>
        this.#recordFs("fs/write_text_file", params, writeTextFile ?? writeFile),
      );

    this.#connection = app
      .connectWith(stream, async (ctx) => {
        this.ctx = ctx;
        this.#connected.resolve();
        await this.#done.promise;
      })
      .catch((err) => {
        this.connectionError = err;
        this.#connected.reject(err);
      });
  }

  async #recordFs(method, params, handler) {
    const rec = { method, params };
    this.fsCalls.push(rec);
    try {
      rec.response = await handler(params);
      return rec.response;
    } catch (e) {
      rec.error = e;
      throw e;
    }
  }

  #record(dir, msg) {
    const seq = ++this.#seq;
    this.wire.push({ seq, dir, msg });
    if (dir === "client") {
      if (msg && typeof msg === "object" && "method" in msg && "id" in msg) this.#clientRequestMethods.set(msg.id, msg.method);
      return;
    }
    const problems = validateAgentMessage(msg, (id) => this.#clientRequestMethods.get(id), { unstable: this.unstable });
    if (problems.length) this.violations.push({ msg, problems });
  }

  #checkRawLine(line) {
    const t = line.trim();
    if (!t) return;
    let v;
    try {
      v = JSON.parse(t);
    } catch {
      this.violations.push({
        msg: line,
        problems: [{ def: "framing", message: "stdout line is not JSON (stdout must carry only ACP messages; logs go to stderr)", errors: [] }],
      });
      return;
    }
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
      this.violations.push({
        msg: v,
        problems: [{ def: "framing", message: "stdout line is not a JSON-RPC object (batches are not allowed in ACP)", errors: [] }],
      });
    }
  }

  #seqOfAgentRequest(id) {
    for (let i = this.wire.length - 1; i >= 0; i--) {
      const { dir, msg, seq } = this.wire[i];
      if (dir === "agent" && msg.id === id && "method" in msg) return seq;
    }
    return undefined;
  }

  /** Agent messages only. */
  get agentMessages() {
    return this.wire.filter((w) => w.dir === "agent");
  }

  /** SDK-delivered session/update payloads for a session (in arrival order). */
  updates(sessionId) {
    return this.updatesBySession.get(sessionId) ?? [];
  }

  /** session/update entries for a session as seen on the raw wire: [{seq, update}]. */
  wireUpdates(sessionId) {
    return this.wire
      .filter((w) => w.dir === "agent" && w.msg.method === "session/update" && w.msg.params?.sessionId === sessionId)
      .map((w) => ({ seq: w.seq, update: w.msg.params.update }));
  }

  /** The wire seq of the agent's response to the client request `method` (last one if several). */
  responseSeq(method) {
    const ids = new Set(this.wire.filter((w) => w.dir === "client" && w.msg.method === method && "id" in w.msg).map((w) => w.msg.id));
    const r = this.wire.filter((w) => w.dir === "agent" && !("method" in w.msg) && ids.has(w.msg.id));
    return r.length ? r[r.length - 1].seq : undefined;
  }

  /** Sends a request through the SDK; rejects with the JSON-RPC error (RequestError) or on timeout. */
  async request(method, params, { timeout = REQUEST_TIMEOUT_MS } = {}) {
    let timer;
    const timeoutP = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${method} got no response within ${timeout} ms\n${this.diagnostics()}`)),
        timeout,
      );
    });
    try {
      return await Promise.race([this.ctx.request(method, params), timeoutP]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Like request() but resolves to {error} instead of rejecting with a JSON-RPC error. */
  async requestError(method, params, opts) {
    try {
      const result = await this.request(method, params, opts);
      return { result };
    } catch (error) {
      if (error instanceof acp.RequestError || (error && typeof error.code === "number")) return { error };
      throw error;
    }
  }

  notify(method, params) {
    return this.ctx.notify(method, params);
  }

  async initialize(extra = {}) {
    return this.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "pixir-conformance", version: "0.0.0" },
      ...extra,
    });
  }

  newSession(cwd = this.sandbox.workspace) {
    return this.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  }

  prompt(sessionId, prompt, opts) {
    const blocks = typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt;
    return this.request(acp.methods.agent.session.prompt, { sessionId, prompt: blocks }, opts);
  }

  /**
   * Runs one prompt turn and returns
   * { response, updates, wireUpdates, requestSeq, responseSeq, late }:
   * `updates` are the SDK-delivered updates for the session during the turn,
   * `wireUpdates` the raw ones ({seq, update}) up to the response, and `late`
   * the conversation updates that arrived AFTER the prompt response
   * (a conformant agent sends none).
   */
  async turn(sessionId, prompt, opts) {
    const seqBefore = this.#seq;
    const before = this.updates(sessionId).length;
    const response = await this.prompt(sessionId, prompt, opts);
    return this.#finishTurn(sessionId, seqBefore, before, response);
  }

  /** Starts a turn without awaiting it; `.done` resolves like turn() (or rejects). */
  startTurn(sessionId, prompt, opts) {
    const seqBefore = this.#seq;
    const before = this.updates(sessionId).length;
    const done = this.prompt(sessionId, prompt, opts).then((response) => this.#finishTurn(sessionId, seqBefore, before, response));
    done.catch(() => {});
    return { done, seqBefore, updatesSoFar: () => this.updates(sessionId).slice(before) };
  }

  async #finishTurn(sessionId, seqBefore, before, response) {
    // Let late notifications (a violation) show up, and let the SDK finish
    // delivering what is already on the wire.
    await sleep(SETTLE_MS);
    // Wait until the SDK has delivered every update already on the wire (one
    // it rejects never arrives: assertConformant reports that).
    const end = Date.now() + REQUEST_TIMEOUT_MS;
    while (this.updates(sessionId).length < this.wireUpdates(sessionId).length && Date.now() < end) await sleep(10);
    const req = this.wire.find((w) => w.seq > seqBefore && w.dir === "client" && w.msg.method === "session/prompt" && "id" in w.msg);
    const resp = req && this.wire.find((w) => w.dir === "agent" && !("method" in w.msg) && w.msg.id === req.msg.id);
    const all = this.wireUpdates(sessionId).filter((u) => u.seq > seqBefore);
    return {
      response,
      updates: this.updates(sessionId).slice(before),
      wireUpdates: all.filter((u) => u.seq < resp.seq),
      requestSeq: req.seq,
      responseSeq: resp.seq,
      late: all.filter((u) => u.seq > resp.seq && isConversationUpdate(u.update)),
    };
  }

  cancel(sessionId) {
    return this.notify(acp.methods.agent.session.cancel, { sessionId });
  }

  /** Polls `pred()` until it is truthy; returns its value. */
  async waitFor(pred, what, timeout = REQUEST_TIMEOUT_MS) {
    const end = Date.now() + timeout;
    for (;;) {
      const v = pred();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}\n${this.diagnostics()}`);
      if (this.exit) throw new Error(`agent exited (${JSON.stringify(this.exit)}) while waiting for ${what}\n${this.diagnostics()}`);
      await sleep(10);
    }
  }

  /** Wire trace and stderr tail for failure messages. */
  diagnostics({ wireTail = 40 } = {}) {
    const tail = this.wire.slice(-wireTail).map((w) => `  ${w.seq} ${w.dir === "agent" ? "<-" : "->"} ${truncate(JSON.stringify(w.msg), 600)}`);
    return [
      `agent: ${this.args.join(" ")}${this.exit ? ` (exited ${JSON.stringify(this.exit)})` : ""}`,
      `wire (last ${tail.length} of ${this.wire.length}):`,
      ...tail,
      `stderr (tail):`,
      this.stderr.slice(-3000).replace(/^/gm, "  "),
    ].join("\n");
  }

  /** Fails if any agent message violated the schema, or the SDK dropped an update. */
  assertConformant() {
    const extra = [];
    for (const [sid, list] of this.updatesBySession) {
      const n = this.wireUpdates(sid).length;
      if (n !== list.length) extra.push(`session ${sid}: ${n} session/update on the wire but the SDK client accepted ${list.length}`);
    }
    for (const w of this.agentMessages) {
      const sid = w.msg.method === "session/update" ? w.msg.params?.sessionId : undefined;
      if (sid !== undefined && !this.updatesBySession.has(sid))
        extra.push(`session ${sid}: session/update on the wire was rejected by the SDK client`);
    }
    if (this.violations.length || extra.length) {
      assert.fail(
        `agent sent ${this.violations.length} message(s) violating ACP v1 schema/framing` +
          (this.violations.length ? `:\n${formatProblems(this.violations)}` : "") +
          (extra.length ? `\nSDK client disagreements:\n  ${[...new Set(extra)].join("\n  ")}` : "") +
          `\nstderr (tail):\n${this.stderr.slice(-2000)}`,
      );
    }
  }

  /** Closes stdin and waits for the process to exit (SIGTERM, then SIGKILL, if it lingers). */
  async close() {
    this.#done.resolve();
    await this.#connection;
    try {
      this.child.stdin.end();
    } catch {}
    const waitExit = (ms) => {
      let timer;
      const timeout = new Promise((r) => (timer = setTimeout(() => r(false), ms)));
      return Promise.race([this.#exited.promise.then(() => true), timeout]).finally(() => clearTimeout(timer));
    };
    if (!(await waitExit(3000))) {
      this.lingeredAfterEof = true;
      this.child.kill("SIGTERM");
      if (!(await waitExit(2000))) {
        this.child.kill("SIGKILL");
        await this.#exited.promise;
      }
    }
  }

  /** Kills the process hard (simulates a crash / editor killing the agent). */
  async kill() {
    this.#done.resolve();
    this.child.kill("SIGKILL");
    await this.#exited.promise;
    await this.#connection;
  }
}

/**
 * Per-test fixture: sandbox + started agents, all torn down by `end()`,
 * which also asserts every agent connection was conformant.
 */
export function fixture() {
  const sandbox = makeSandbox();
  const agents = [];
  return {
    sandbox,
    agents,
    /** Starts `pixir acp --script <toml>` in this sandbox and initializes it unless init === false. */
    async start(toml, { init = true, ...opts } = {}) {
      const scriptPath = sandbox.script(toml);
      const a = await AgentProcess.start({ scriptPath, sandbox, ...opts });
      agents.push(a);
      if (init) await a.initialize();
      return a;
    },
    async end({ keep = false } = {}) {
      for (const a of agents) if (!a.exit) await a.close();
      if (!keep) sandbox.cleanup();
      for (const a of agents) a.assertConformant();
    },
  };
}

// ---------------------------------------------------------------------------
// Update helpers

export const CHUNK_KINDS = new Set(["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"]);

/** Chunks and tool calls: the updates that make up the conversation. */
export function isConversationUpdate(u) {
  return CHUNK_KINDS.has(u.sessionUpdate) || u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update";
}

/** Concatenated text of all `kind` chunks. */
export function chunkText(updates, kind = "agent_message_chunk") {
  return updates
    .filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");
}

/**
 * Normalises a conversation stream: merges consecutive text chunks of the
 * same kind into one message and folds each tool call's `tool_call` +
 * `tool_call_update`s into its final state; drops non-conversation updates.
 */
export function normalizeConversation(updates) {
  const out = [];
  const tools = new Map();
  for (const u of updates) {
    if (CHUNK_KINDS.has(u.sessionUpdate)) {
      const last = out[out.length - 1];
      const text = u.content?.type === "text" ? u.content.text : `[${u.content?.type}]`;
      if (last && last.type === u.sessionUpdate) last.text += text;
      else out.push({ type: u.sessionUpdate, text });
    } else if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") {
      let t = tools.get(u.toolCallId);
      if (!t) {
        t = { type: "tool_call", toolCallId: u.toolCallId };
        tools.set(u.toolCallId, t);
        out.push(t);
      }
      for (const k of ["title", "kind", "status", "content"]) if (u[k] !== undefined && u[k] !== null) t[k] = u[k];
    }
  }
  return out;
}

/** All updates for one tool call, in order. */
export function toolCallUpdates(updates, toolCallId) {
  return updates.filter((u) => (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === toolCallId);
}

/** The `tool_call` updates (one per tool call) in order. */
export function toolCalls(updates) {
  return updates.filter((u) => u.sessionUpdate === "tool_call");
}

/** Final folded state of a tool call. */
export function finalToolState(updates, toolCallId) {
  const t = { toolCallId };
  for (const u of toolCallUpdates(updates, toolCallId))
    for (const [k, v] of Object.entries(u)) if (k !== "sessionUpdate" && v !== undefined && v !== null) t[k] = v;
  return t;
}

/** Text of all `content` items in tool-call content. */
export function toolContentText(content = []) {
  return content
    .filter((c) => c.type === "content" && c.content?.type === "text")
    .map((c) => c.content.text)
    .join("\n");
}

/** TOML basic-string literal. */
export function tomlStr(s) {
  return JSON.stringify(s); // JSON string escapes are valid TOML basic-string escapes for our inputs
}

/**
 * Runs `body(f)` with a fresh fixture; always tears it down and asserts
 * schema conformance of every agent connection, reporting both the body's
 * failure and conformance violations if both happen.
 */
export async function withFixture(body) {
  const f = fixture();
  let bodyErr;
  try {
    await body(f);
  } catch (e) {
    bodyErr = e;
  }
  let endErr;
  try {
    await f.end({ keep: process.env.PIXIR_CONF_KEEP === "1" });
  } catch (e) {
    endErr = e;
  }
  if (bodyErr && endErr) {
    throw appendToError(bodyErr, `\n\nAlso, on teardown: ${endErr.message}`);
  }
  if (bodyErr) {
    if (f.agents.length && !/stderr \(tail\)/.test(bodyErr.message ?? "")) {
      appendToError(bodyErr, `\n\n${f.agents.map((a) => a.diagnostics()).join("\n\n")}`);
    }
    throw bodyErr;
  }
  if (endErr) throw endErr;
}

/** Appends text to an error's message, keeping its stack (which the reporter prints) in sync. */
function appendToError(err, text) {
  if (!(err instanceof Error)) return new Error(String(err) + text);
  const oldMessage = err.message;
  err.message = oldMessage + text;
  if (typeof err.stack === "string" && err.stack.includes(oldMessage)) err.stack = err.stack.replace(oldMessage, () => err.message);
  return err;
}

/**
 * A scripted-provider script in which the prompt "fan out" spawns one
 * shared-workspace child per task ("child one", …), waits for them all, and
 * ends with `done`; each child answers "finished <its task>".
 */
export function fanOutScript(tasks, { opening, done }) {
  const spawns = tasks
    .map((task) => `  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = ${tomlStr(task)}, workspace_mode = "shared" }
`)
    .join("");
  return `
[[rule]]
match = "^fan out$"
  [[rule.reply]]
  text = ${tomlStr(opening)}
${spawns}  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 15000 }
  [[rule.reply]]
  text = ${tomlStr(done)}
[[rule]]
match = "^child"
  [[rule.reply]]
  text = "finished {{.User}}"
`;
}
