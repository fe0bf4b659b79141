// Forks (issue 16): session/fork (unstable in the SDK 2.4.0's schema, so
// the client is the unstable one, judged by schema.unstable.json) makes a
// session whose history is the source's up to the fork; and spawn_agent with
// fork_context starts a child from its parent's conversation, which the
// child's first model request carries (a fake OpenAI server that speaks the
// Chat Completions SSE wire format records it). Also, with the same fake
// server steering a parent through send_input: the follow-up is a
// session_message from parent to child, and the child runs again.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { withFixture, normalizeConversation, chunkText, acpUnstable, TEST_TIMEOUT_MS } from "../harness.mjs";

const SCRIPT = `
[[rule]]
match = "^hello$"
  [[rule.reply]]
  text = "hi there"
[[rule]]
match = "^note it$"
  [[rule.reply]]
  text = "Writing it down."
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "note.txt", content = "the note\\n" }
  [[rule.reply]]
  text = "Noted."
[[rule]]
match = "^after the fork$"
  [[rule.reply]]
  text = "only in the source"
`;

const UNSTABLE_CAPS = { fs: { readTextFile: false, writeTextFile: false }, terminal: false, subagents: {}, plan: {} };

test("session/fork: the fork's history is the source's up to the fork; later turns stay apart", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT, { init: false, unstable: true });
    const init = await a.initialize({ clientCapabilities: UNSTABLE_CAPS });
    assert.deepEqual(init.agentCapabilities.sessionCapabilities.fork, {}, "fork is advertised to a client of the unstable protocol");
    const { sessionId: source } = await a.newSession(f.sandbox.workspace);
    await a.turn(source, "hello");
    await a.turn(source, "note it");
    const { sessionId: fork } = await a.request(acpUnstable.methods.agent.session.fork, { sessionId: source, cwd: f.sandbox.workspace, mcpServers: [] });
    assert.notEqual(fork, source);
    await a.turn(source, "after the fork");

    const list = await a.request(acpUnstable.methods.agent.session.list, { cwd: f.sandbox.workspace });
    assert.deepEqual(list.sessions.map((s) => s.sessionId).sort(), [source, fork].sort());
    await a.close();

    // A new process replays both: the fork is the source without the turn after it.
    const b = await f.start(SCRIPT, { init: false, unstable: true });
    await b.initialize({ clientCapabilities: UNSTABLE_CAPS });
    for (const id of [source, fork]) await b.request(acpUnstable.methods.agent.session.load, { sessionId: id, cwd: f.sandbox.workspace, mcpServers: [] });
    const src = normalizeConversation(b.updates(source));
    const frk = normalizeConversation(b.updates(fork));
    assert.deepEqual(frk, src.slice(0, src.length - 2), "the fork's conversation is the source's up to the fork");
    assert.match(JSON.stringify(frk), /Noted\./);
    assert.doesNotMatch(JSON.stringify(frk), /only in the source/);
  }));

test("session/fork of an unknown session is -32002", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT, { init: false, unstable: true });
    await a.initialize({ clientCapabilities: UNSTABLE_CAPS });
    const missing = await a.requestError(acpUnstable.methods.agent.session.fork, { sessionId: "no-such-session", cwd: f.sandbox.workspace });
    assert.equal(missing.error?.code, -32002, JSON.stringify(missing));
  }));

// --- a child started from a fork, against a fake OpenAI server -----------

// Each answer ends with its usage, as OpenAI sends it when asked
// (stream_options.include_usage): a server that sends none makes Pixir
// estimate and say so in the reply.
const usageChunk = { id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { prompt_tokens: 1000, completion_tokens: 5, total_tokens: 1005 } };
function sse(events) {
  return async (res) => {
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    for (const ev of [...events, usageChunk]) res.write(`data: ${JSON.stringify(ev)}\n\n`);
    res.write("data: [DONE]\n\n");
    res.end();
  };
}
const choice = (delta, finish = null) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
const textReply = (text) => sse([choice({ role: "assistant", content: text }), choice({}, "stop")]);
const callReply = (id, name, args) =>
  sse([choice({ role: "assistant", tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: JSON.stringify(args) } }] }), choice({}, "tool_calls")]);

const CODEWORD = "the codeword is PELICAN";
const text = (m) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text ?? "").join(""));

/** Answers by the conversation's last message: the parent's three turns' steps, and the child's task. */
function answer(body) {
  const last = body.messages.at(-1);
  if (last.role === "tool") {
    if (last.tool_call_id === "call_spawn") return callReply("call_wait", "wait_agent", { timeout_ms: 60000 });
    return textReply("the child is done");
  }
  const said = text(last);
  if (said.includes("remember:")) return textReply("noted");
  if (said.includes("delegate with context")) return callReply("call_spawn", "spawn_agent", { task: "say the codeword", workspace_mode: "shared", fork_context: true });
  if (said.includes("say the codeword")) return textReply("PELICAN");
  return textReply("?");
}

test("spawn_agent fork_context: the child's first model request carries its parent's conversation", { timeout: TEST_TIMEOUT_MS }, async () => {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const json = JSON.parse(body);
      requests.push(json);
      answer(json)(res);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  try {
    await withFixture(async (f) => {
      const a = await f.start(SCRIPT, {
        extraArgs: ["--provider", "openai", "--base-url", `http://127.0.0.1:${server.address().port}/v1`, "--model", "m"],
        env: { PIXIR_PROVIDER: "", PIXIR_MODEL: "", PIXIR_PROFILE: "", OPENAI_BASE_URL: "", OPENAI_API_KEY: "sk-conformance" },
      });
      const { sessionId } = await a.newSession(f.sandbox.workspace);
      await a.turn(sessionId, `remember: ${CODEWORD}`);
      const t = await a.turn(sessionId, "delegate with context");
      assert.equal(chunkText(t.updates), "the child is done");

      // The child's request ends with its task as a user message (the
      // parent's next one ends with the spawn's result, which quotes it).
      const child = requests.find((r) => r.messages.at(-1).role === "user" && text(r.messages.at(-1)).includes("say the codeword"));
      assert.ok(child, "the child called the model");
      const said = child.messages.map((m) => `${m.role}: ${text(m)}`);
      assert.ok(said.includes(`user: remember: ${CODEWORD}`), `the child sees the parent's conversation: ${JSON.stringify(said)}`);
      assert.ok(said.includes("assistant: noted"), "and the parent's answers");
      assert.ok(!child.messages.some((m) => (m.tool_calls ?? []).some((c) => c.id === "call_spawn")), `not the unanswered spawn call itself: ${JSON.stringify(child.messages.slice(1).map((m) => [m.role, text(m).slice(0, 60), (m.tool_calls ?? []).map((c) => c.id), m.tool_call_id]))}`);
    });
  } finally {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  }
});

// --- send_input as a session_message (native children) --------------------

/** The parent spawns a child, waits, sends it a follow-up, waits again; the child answers each. */
function conversation(body) {
  const last = body.messages.at(-1);
  const said = text(last);
  if (last.role === "tool") {
    const out = JSON.parse(last.content);
    switch (last.tool_call_id) {
      case "call_spawn":
        return callReply("call_wait1", "wait_agent", { timeout_ms: 60000 });
      case "call_wait1":
        return callReply("call_input", "send_input", { id: out.output.agents[0].id, message: "and now the follow-up" });
      case "call_input":
        return callReply("call_wait2", "wait_agent", { timeout_ms: 60000 });
      default:
        return textReply("all done");
    }
  }
  if (said.includes("talk to a child")) return callReply("call_spawn", "spawn_agent", { task: "first task", workspace_mode: "shared" });
  if (said.includes("and now the follow-up")) return textReply("follow-up done");
  if (said.includes("first task")) return textReply("first done");
  return textReply("?");
}

test("native children: send_input is a session_message from parent to child, and the child runs again", { timeout: TEST_TIMEOUT_MS }, async () => {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => conversation(JSON.parse(body))(res));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  try {
    await withFixture(async (f) => {
      const a = await f.start(SCRIPT, {
        init: false,
        unstable: true,
        extraArgs: ["--provider", "openai", "--base-url", `http://127.0.0.1:${server.address().port}/v1`, "--model", "m"],
        env: { PIXIR_PROVIDER: "", PIXIR_MODEL: "", PIXIR_PROFILE: "", OPENAI_BASE_URL: "", OPENAI_API_KEY: "sk-conformance" },
      });
      await a.initialize({ clientCapabilities: UNSTABLE_CAPS });
      const { sessionId } = await a.newSession(f.sandbox.workspace);
      const t = await a.turn(sessionId, "talk to a child");
      assert.equal(chunkText(t.updates), "all done");

      const sub = t.updates.filter((u) => u.sessionUpdate === "subagent_update");
      const childId = sub[0].sessionId;
      const messages = t.updates.filter((u) => u.sessionUpdate === "session_message");
      assert.equal(messages.length, 1, JSON.stringify(messages));
      assert.equal(messages[0].senderSessionId, sessionId);
      assert.equal(messages[0].recipientSessionId, childId);
      assert.equal(messages[0].content[0].text, "and now the follow-up");
      assert.deepEqual(
        sub.filter((u) => u.state).map((u) => u.state.state),
        ["running", "idle", "running", "idle"],
        "the child runs again on its input",
      );
      const own = a.updates(childId);
      assert.equal(chunkText(own), "first donefollow-up done");
      assert.equal(chunkText(own, "user_message_chunk"), "first taskand now the follow-up");
    });
  } finally {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  }
});
