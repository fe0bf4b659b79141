// MCP servers passed in session/new become tools: real servers from npm
// (@modelcontextprotocol/server-everything and server-filesystem, pinned in
// package-lock.json), started by `pixir acp` over stdio and http, listed to
// and called by the scripted model, checked before the call, refused in
// read_only, reported when they crash, cancelled on the server, and used
// by a child.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import {
  withFixture, acp, chunkText, toolCalls, finalToolState, toolContentText, sleep, selectKind,
} from "../harness.mjs";

const TIMEOUT = 90_000; // node servers start in about a second each; a busy CI machine is slower
const REQ = { timeout: 60_000 };

const modules = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "@modelcontextprotocol");
const EVERYTHING = join(modules, "server-everything", "dist", "index.js");
const FILESYSTEM = join(modules, "server-filesystem", "dist", "index.js");
const NODE = process.execPath;

/** The everything server over stdio; `tap` copies what Pixir sends it to a file. */
function everything({ tap, pidFile } = {}) {
  if (tap) return { name: "everything", command: "/bin/sh", args: ["-c", `tee -a '${tap}' | '${NODE}' '${EVERYTHING}' stdio`], env: [] };
  if (pidFile) return { name: "everything", command: "/bin/sh", args: ["-c", `echo $$ > '${pidFile}'; exec '${NODE}' '${EVERYTHING}' stdio`], env: [] };
  return { name: "everything", command: NODE, args: [EVERYTHING, "stdio"], env: [] };
}
const filesystem = (dir) => ({ name: "files", command: NODE, args: [FILESYSTEM, dir], env: [{ name: "NODE_NO_WARNINGS", value: "1" }] });

const SCRIPT = `
[[rule]]
match = "^list tools$"
  [[rule.reply]]
  text = "tools: {{.Tools}}"

[[rule]]
match = "^echo$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__everything__echo"
  arguments = { message = "hello from pixir" }
  [[rule.reply]]
  text = "echo: {{output .ToolResult}}"

[[rule]]
match = "^sum$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__everything__get-sum"
  arguments = { a = 2, b = 3 }
  [[rule.reply]]
  text = "sum: {{output .ToolResult}}"

[[rule]]
match = "^image$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__everything__get-tiny-image"
  arguments = {}
  [[rule.reply]]
  text = "seen"

[[rule]]
match = "^read file$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__files__read_text_file"
  arguments = { path = "hello.txt" }
  [[rule.reply]]
  text = "file: {{output .ToolResult}}"

[[rule]]
match = "^bad echo$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__everything__echo"
  arguments = {}
  [[rule.reply.tool_calls]]
  name = "mcp__everything__echo"
  arguments = { message = 5 }
  [[rule.reply]]
  text = "refused: {{output .ToolResult}}"

[[rule]]
match = "^toggle$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__everything__toggle-simulated-logging"
  arguments = {}
  [[rule.reply.tool_calls]]
  name = "mcp__everything__echo"
  arguments = { message = "still allowed" }
  [[rule.reply]]
  text = "done"

[[rule]]
match = "^slow$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__everything__trigger-long-running-operation"
  arguments = { duration = 30, steps = 30 }
  [[rule.reply]]
  text = "finished"

[[rule]]
match = "^delegate$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child echo", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 60000 }
  [[rule.reply]]
  text = "the child is done"

[[rule]]
match = "^workflow$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '''{"steps": [
    {"id": "with", "task": "[mcp-echo] with the server", "allowed_mcp_servers": ["everything"]},
    {"id": "without", "task": "[mcp-echo] without servers", "allowed_mcp_servers": []}]}'''
  [[rule.reply]]
  text = "workflow ran"

[[rule]]
match = "^bad workflow$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '''{"steps": [{"id": "lost", "task": "[mcp-echo] nowhere", "allowed_mcp_servers": ["tracker"]}]}'''
  [[rule.reply]]
  text = "refused"

[[rule]]
match = '\\[mcp-echo\\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__everything__echo"
  arguments = { message = "step" }
  [[rule.reply]]
  text = "step got: {{output .ToolResult}}"

[[rule]]
match = "^child echo"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__everything__echo"
  arguments = { message = "from the child" }
  [[rule.reply]]
  text = "child got: {{output .ToolResult}}"
`;

const NOTICES = { clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, session: { notices: {} } } };

function newSession(a, servers, cwd = a.sandbox.workspace) {
  return a.request(acp.methods.agent.session.new, { cwd, mcpServers: servers }, REQ);
}

function toolNames(text) {
  return new Set(text.replace(/^tools: /, "").split(/\s+/).filter(Boolean));
}

test("mcp: the model lists and calls the tools of stdio servers from npm", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    writeFileSync(join(f.sandbox.workspace, "hello.txt"), "Hello from the workspace\n");
    const a = await f.start(SCRIPT, { init: false });
    const init = await a.initialize();
    assert.equal(init.agentCapabilities.mcpCapabilities.http, true, "http MCP servers are advertised");
    const { sessionId } = await newSession(a, [everything(), filesystem(f.sandbox.workspace)]);

    const listed = await a.turn(sessionId, "list tools", REQ);
    const names = toolNames(chunkText(listed.updates));
    for (const n of ["read", "bash", "mcp__everything__echo", "mcp__everything__get-sum", "mcp__files__read_text_file", "mcp__files__write_file"])
      assert.ok(names.has(n), `${n} is offered to the model: ${[...names].join(" ")}`);

    const echo = await a.turn(sessionId, "echo", REQ);
    assert.equal(chunkText(echo.updates), "echo: Echo: hello from pixir");
    const [call] = toolCalls(echo.updates);
    assert.equal(call.title, "everything: Echo Tool");
    assert.equal(call.kind, "fetch", "annotated read-only");
    assert.deepEqual(call.rawInput, { message: "hello from pixir" });
    const end = finalToolState(echo.updates, call.toolCallId);
    assert.equal(end.status, "completed");
    assert.equal(toolContentText(end.content), "Echo: hello from pixir");

    const sum = await a.turn(sessionId, "sum", REQ);
    assert.match(chunkText(sum.updates), /^sum: The sum of 2 and 3 is 5\.?/);

    const image = await a.turn(sessionId, "image", REQ);
    const imageEnd = finalToolState(image.updates, toolCalls(image.updates)[0].toolCallId);
    assert.equal(imageEnd.status, "completed");
    const img = imageEnd.content.find((c) => c.content?.type === "image");
    assert.ok(img, `an image block: ${JSON.stringify(imageEnd.content)}`);
    assert.equal(img.content.mimeType, "image/png");
    assert.ok(img.content.data.length > 100, "with its data");

    const read = await a.turn(sessionId, "read file", REQ);
    assert.equal(chunkText(read.updates), "file: Hello from the workspace\n");
  }));

test("mcp: arguments that break a tool's schema are refused before the call", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    const tap = join(f.sandbox.root, "to-everything.ndjson");
    const a = await f.start(SCRIPT);
    const { sessionId } = await newSession(a, [everything({ tap })]);
    const t = await a.turn(sessionId, "bad echo", REQ);
    const calls = toolCalls(t.updates);
    assert.equal(calls.length, 2);
    const texts = calls.map((c) => {
      const end = finalToolState(t.updates, c.toolCallId);
      assert.equal(end.status, "failed");
      return toolContentText(end.content);
    });
    assert.equal(texts[0], "invalid_args: /: missing property 'message'");
    assert.equal(texts[1], "invalid_args: /message: got number, want string");
    const sent = readFileSync(tap, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    assert.ok(sent.some((m) => m.method === "tools/list"), "the tap saw Pixir list the tools");
    assert.ok(!sent.some((m) => m.method === "tools/call"), `no call reached the server: ${JSON.stringify(sent.map((m) => m.method))}`);
  }));

test("mcp: read_only refuses a tool not annotated read-only; ask says confinement is the server's", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await newSession(a, [everything()]);
    await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "read_only" });
    const ro = await a.turn(sessionId, "toggle", REQ);
    const [toggle, echo] = toolCalls(ro.updates);
    assert.equal(toggle.kind, "other");
    const refused = finalToolState(ro.updates, toggle.toolCallId);
    assert.equal(refused.status, "failed");
    assert.match(toolContentText(refused.content), /^permission_denied: mcp__everything__toggle-simulated-logging changes the workspace and the session is in read_only mode/);
    assert.equal(finalToolState(ro.updates, echo.toolCallId).status, "completed", "a read-only tool still runs");
    assert.equal(a.permissionRequests.length, 0);

    await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "ask" });
    a.permission = selectKind("reject_once");
    const asked = await a.turn(sessionId, "toggle", REQ);
    assert.equal(a.permissionRequests.length, 1, "only the mutation asks");
    const req = a.permissionRequests[0].params;
    assert.equal(req.toolCall.title, "everything: Toggle Simulated Logging");
    assert.match(toolContentText(req.toolCall.content), /runs in the MCP server "everything", outside Pixir: the workspace confinement does not bind it/);
    const [rejected] = toolCalls(asked.updates);
    assert.equal(finalToolState(asked.updates, rejected.toolCallId).status, "failed");
  }));

test("mcp: a server that crashes mid-session is reported, its tools withdrawn, and the session goes on", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    const pidFile = join(f.sandbox.root, "everything.pid");
    const a = await f.start(SCRIPT, { init: false });
    await a.initialize(NOTICES);
    const { sessionId } = await newSession(a, [everything({ pidFile }), filesystem(f.sandbox.workspace)]);
    const first = await a.turn(sessionId, "echo", REQ);
    assert.equal(chunkText(first.updates), "echo: Echo: hello from pixir");

    process.kill(Number(readFileSync(pidFile, "utf8").trim()), "SIGKILL");
    const notice = await a.waitFor(() => a.updates(sessionId).find((u) => u.sessionUpdate === "notice" && /^MCP server/.test(u.title)), "a notice", 30_000);
    assert.equal(notice.severity, "error");
    assert.match(notice.title, /^MCP server "everything" stopped \(it exited: signal: killed\); its \d+ tools are withdrawn$/);

    const listed = await a.turn(sessionId, "list tools", REQ);
    assert.equal(listed.response.stopReason, "end_turn");
    const names = toolNames(chunkText(listed.updates));
    assert.ok(![...names].some((n) => n.startsWith("mcp__everything__")), `withdrawn: ${[...names].join(" ")}`);
    assert.ok(names.has("mcp__files__read_text_file"), "the other server's tools stay");

    const again = await a.turn(sessionId, "echo", REQ);
    const end = finalToolState(again.updates, toolCalls(again.updates)[0].toolCallId);
    assert.equal(end.status, "failed");
    assert.match(toolContentText(end.content), /^unknown_tool: there is no tool named "mcp__everything__echo"/);
  }));

test("mcp: without session.notices, a crash is told in the next turn's text", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    const pidFile = join(f.sandbox.root, "everything.pid");
    const a = await f.start(SCRIPT);
    const { sessionId } = await newSession(a, [everything({ pidFile })]);
    await a.turn(sessionId, "echo", REQ);
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    process.kill(pid, "SIGKILL");
    await a.waitFor(() => /MCP server stopped/.test(a.stderr), "the agent's log of the stop", 30_000);
    const t = await a.turn(sessionId, "list tools", REQ);
    const text = chunkText(t.updates);
    assert.match(text, /\*\*MCP server "everything" stopped \(it exited: signal: killed\); its \d+ tools are withdrawn\*\*/);
    assert.ok(!a.updates(sessionId).some((u) => u.sessionUpdate === "notice"), "no notice to a client that did not ask for them");
  }));

test("mcp: a slow tool shows its progress; cancel ends the turn and reaches the server", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    const tap = join(f.sandbox.root, "to-everything.ndjson");
    const a = await f.start(SCRIPT);
    const { sessionId } = await newSession(a, [everything({ tap })]);
    const turn = a.startTurn(sessionId, "slow", REQ);
    await a.waitFor(() => turn.updatesSoFar().some((u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress"), "the slow call running", 30_000);
    await a.waitFor(() => existsSync(tap) && /"tools\/call"/.test(readFileSync(tap, "utf8")), "the call reaching the server", 30_000);
    // The server's progress notifications show in the tool call.
    await a.waitFor(() => turn.updatesSoFar().some((u) => u.sessionUpdate === "tool_call_update" && /^1\/30/.test(toolContentText(u.content))),
      "the first progress of the slow call", 30_000);
    const started = Date.now();
    await a.cancel(sessionId);
    const t = await turn.done;
    assert.equal(t.response.stopReason, "cancelled");
    assert.ok(Date.now() - started < 20_000, "the 30 s operation did not run to its end");
    const [call] = toolCalls(t.updates);
    const end = finalToolState(t.updates, call.toolCallId);
    assert.equal(end.status, "failed");
    assert.match(toolContentText(end.content), /^cancelled: /);
    await a.waitFor(() => /"notifications\/cancelled"/.test(readFileSync(tap, "utf8")), "notifications/cancelled sent to the server", 10_000);
  }));

test("mcp: a child uses its parent's server", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await newSession(a, [everything()]);
    const t = await a.turn(sessionId, "delegate", REQ);
    assert.equal(chunkText(t.updates).trim().endsWith("the child is done"), true);
    const child = toolCalls(t.updates).find((c) => c.toolCallId.startsWith("subagent-"));
    assert.ok(child, "the child's tool call");
    const end = finalToolState(t.updates, child.toolCallId);
    assert.equal(end.status, "completed", JSON.stringify(end));
    assert.match(toolContentText(end.content), /child got: Echo: from the child/);
  }));

test("mcp: a workflow step narrows the servers its child may use", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await newSession(a, [everything()]);
    const t = await a.turn(sessionId, "workflow", REQ);
    const steps = Object.fromEntries(toolCalls(t.updates).filter((c) => c._meta?.pixir?.stepId)
      .map((c) => [c._meta.pixir.stepId, toolContentText(finalToolState(t.updates, c.toolCallId).content)]));
    assert.match(steps.with, /step got: Echo: step/);
    assert.match(steps.without, /step got: unknown_tool: there is no tool named "mcp__everything__echo"/);

    const bad = await a.turn(sessionId, "bad workflow", REQ);
    const [wf] = toolCalls(bad.updates);
    const end = finalToolState(bad.updates, wf.toolCallId);
    assert.equal(end.status, "failed");
    assert.match(toolContentText(end.content), /steps\[0\] "lost": this session has no MCP server "tracker" \(it has everything\)/);
    assert.ok(!toolCalls(bad.updates).some((c) => c.toolCallId.startsWith("subagent-")), "no step started");
  }));

/** A free local port. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

test("mcp: an http (streamable) server", { timeout: TIMEOUT }, async () => {
  const port = await freePort();
  const server = spawn(NODE, [EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  server.stderr.on("data", (d) => (log += d));
  try {
    for (let i = 0; !/listening on port/.test(log); i++) {
      if (i > 600 || server.exitCode !== null) throw new Error(`the http server did not start:\n${log}`);
      await sleep(50);
    }
    await withFixture(async (f) => {
      const a = await f.start(SCRIPT);
      const { sessionId } = await newSession(a, [{ type: "http", name: "everything", url: `http://127.0.0.1:${port}/mcp`, headers: [{ name: "X-Pixir-Test", value: "1" }] }]);
      const t = await a.turn(sessionId, "echo", REQ);
      assert.equal(chunkText(t.updates), "echo: Echo: hello from pixir");
    });
  } finally {
    server.kill();
  }
});

test("mcp: a malformed mcpServers entry is invalid params", { timeout: TIMEOUT }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    for (const [servers, re] of [
      [[{ name: "x", args: [], env: [] }], /mcpServers\[0\]\.command/],
      [[{ type: "sse", name: "x", url: "http://localhost/sse", headers: [] }], /sse is not supported/],
      [[everything(), everything()], /named twice/],
    ]) {
      const { error } = await a.requestError(acp.methods.agent.session.new, { cwd: f.sandbox.workspace, mcpServers: servers });
      assert.equal(error?.code, -32602, JSON.stringify(error));
      assert.match(error.message, re);
    }
  }));
