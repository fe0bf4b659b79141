// Scenario 6: session/load in a fresh process replays the conversation
// before answering, and the replay matches what was streamed live.

import { test } from "node:test";
import assert from "node:assert/strict";
import { acp, withFixture, normalizeConversation, isConversationUpdate, chunkText, TEST_TIMEOUT_MS } from "../harness.mjs";

const GREETING = "Hello there, friend. Nice to see you.";
const THOUGHT = "A greeting deserves a greeting.";
const DONE = "Wrote notes.txt and read it back.";

const SCRIPT = `
[[rule]]
match = "(?i)notes"
  [[rule.reply]]
  text = "Let me write the file."
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "notes.txt", content = "hi\\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "notes.txt" }
  [[rule.reply]]
  text = ${JSON.stringify(DONE)}

[[rule]]
match = "(?i)hello"
  [[rule.reply]]
  reasoning = ${JSON.stringify(THOUGHT)}
  text = ${JSON.stringify(GREETING)}

[[rule]]
  [[rule.reply]]
  text = "fallback"
`;

const PROMPTS = ["hello, who are you?", "write notes.txt then read it"];

test("session/load in a fresh process replays the conversation before answering", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;

    // Live session in process A.
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(ws);
    const turns = [];
    for (const p of PROMPTS) {
      const t = await a.turn(sessionId, p);
      assert.equal(t.response.stopReason, "end_turn", `live turn ${JSON.stringify(p)}: ${JSON.stringify(t.response)}`);
      turns.push(t);
    }
    const live = a.updates(sessionId).filter(isConversationUpdate);
    await a.close();

    // Fresh process B, same PIXIR_HOME.
    const b = await f.start(SCRIPT, { init: false });
    const init = await b.initialize();
    assert.equal(init.agentCapabilities?.loadSession, true, "loadSession capability");
    const loadResp = await b.request(acp.methods.agent.session.load, { sessionId, cwd: ws, mcpServers: [] });
    await b.waitFor(() => b.responseSeq("session/load"), "the session/load response");
    const respSeq = b.responseSeq("session/load");

    // Every replayed update arrives BEFORE the load response.
    const wire = b.wireUpdates(sessionId);
    const after = wire.filter((w) => w.seq > respSeq && isConversationUpdate(w.update));
    assert.deepEqual(after.map((w) => w.update), [], "session/update replay arrived after the session/load response");
    assert.ok(wire.length > 0, "session/load replayed nothing");

    const replay = b.updates(sessionId).filter(isConversationUpdate);

    // 1. Replay minus user messages equals the live stream (normalised).
    const liveNorm = normalizeConversation(live);
    const replayNorm = normalizeConversation(replay.filter((u) => u.sessionUpdate !== "user_message_chunk"));
    assert.deepEqual(replayNorm, liveNorm, "replay (without user messages) differs from the live stream");

    // 2. The replay's user messages are the prompts that were sent.
    const userTexts = normalizeConversation(replay).filter((e) => e.type === "user_message_chunk").map((e) => e.text);
    assert.deepEqual(userTexts, PROMPTS, "replayed user_message_chunk texts differ from the prompts sent");

    // 3. Each user message sits right before its turn's output.
    const expected = turns.flatMap((t, i) => [
      { type: "user_message_chunk", text: PROMPTS[i] },
      ...normalizeConversation(t.updates.filter(isConversationUpdate)),
    ]);
    assert.deepEqual(normalizeConversation(replay), expected, "replay interleaving of user prompts and agent output");

    // Sanity on what the live stream held, so the comparison is meaningful.
    assert.ok(liveNorm.some((e) => e.type === "agent_thought_chunk"), "live stream had no thought");
    assert.equal(liveNorm.filter((e) => e.type === "tool_call").length, 2, "live stream should hold 2 tool calls");
    assert.equal(chunkText(turns[0].updates), GREETING);

    // The response carries the session's modes; the loaded session accepts prompts.
    if (loadResp.modes) assert.equal(loadResp.modes.currentModeId, "auto", `load modes: ${JSON.stringify(loadResp.modes)}`);
    const t3 = await b.turn(sessionId, "hello again");
    assert.equal(t3.response.stopReason, "end_turn", `prompt after load: ${JSON.stringify(t3.response)}`);
  }));

test("session/load of an unknown session is an error response, not a crash", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { error } = await a.requestError(acp.methods.agent.session.load, {
      sessionId: "no-such-session-0000", cwd: f.sandbox.workspace, mcpServers: [],
    });
    assert.ok(error, "session/load of an unknown session succeeded");
    // The agent is still alive and serving.
    const { sessionId } = await a.newSession();
    assert.equal(typeof sessionId, "string");
  }));

test("session/load replays a prompt of an empty text, or of no block, as text blocks that carry their text", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    // Before the fix the replayed user_message_chunk was {"type":"text"}:
    // no "text", which TextContent requires (the SDK client refused it).
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession();
    for (const prompt of [[{ type: "text", text: "" }], [], [{ type: "text", text: "" }, { type: "text", text: "hello" }]]) {
      const t = await a.turn(sessionId, prompt);
      assert.equal(t.response.stopReason, "end_turn", `${JSON.stringify(prompt)}: ${JSON.stringify(t.response)}`);
    }
    await a.close();

    const b = await f.start(SCRIPT);
    await b.request(acp.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    const users = b.wireUpdates(sessionId).map((w) => w.update).filter((u) => u.sessionUpdate === "user_message_chunk");
    assert.deepEqual(users.map((u) => u.content), [
      { type: "text", text: "" },
      { type: "text", text: "" },
      { type: "text", text: "" },
      { type: "text", text: "hello" },
    ]);
  }));
