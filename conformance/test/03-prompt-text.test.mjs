// Scenario 3: a prompt whose answer is streamed text.

import { test } from "node:test";
import assert from "node:assert/strict";
import { withFixture, chunkText, TEST_TIMEOUT_MS } from "../harness.mjs";

const TEXT = "Hello there, friend. This reply is streamed in several word-sized chunks.";
const THOUGHT = "The user greeted me; I should greet them back.";

const SCRIPT = `
[[rule]]
match = "(?i)think"
  [[rule.reply]]
  reasoning = ${JSON.stringify(THOUGHT)}
  text = ${JSON.stringify(TEXT)}

[[rule]]
match = "(?i)hello"
  [[rule.reply]]
  text = ${JSON.stringify(TEXT)}

[[rule]]
  [[rule.reply]]
  text = "fallback"
`;

test("prompt: streamed text arrives as agent_message_chunk updates, then end_turn", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession();
    const t = await a.turn(sessionId, "hello");
    assert.equal(t.response.stopReason, "end_turn", `stopReason: ${JSON.stringify(t.response)}`);

    const chunks = t.updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
    assert.ok(chunks.length >= 1, `no agent_message_chunk; updates: ${JSON.stringify(t.updates)}`);
    for (const c of chunks) assert.equal(c.content.type, "text", `chunk content: ${JSON.stringify(c)}`);
    assert.equal(chunkText(t.updates), TEXT, "concatenated agent_message_chunk text differs from the script's text");

    // All of the turn's output precedes the prompt response on the wire.
    assert.equal(chunkText(t.wireUpdates.map((w) => w.update)), TEXT, "some text chunks arrived after the session/prompt response");
    assert.deepEqual(t.late, [], `conversation updates after the prompt response: ${JSON.stringify(t.late)}`);
    // The agent does not echo the user's prompt while live.
    const echoed = t.updates.filter((u) => u.sessionUpdate === "user_message_chunk");
    assert.deepEqual(echoed, [], "agent echoed user_message_chunk during a live turn");
  }));

test("prompt: reasoning streams as agent_thought_chunk before the answer text", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession();
    const t = await a.turn(sessionId, "think, then say hello");
    assert.equal(t.response.stopReason, "end_turn", `stopReason: ${JSON.stringify(t.response)}`);
    assert.equal(chunkText(t.updates, "agent_thought_chunk"), THOUGHT, `agent_thought_chunk text; updates: ${JSON.stringify(t.updates)}`);
    assert.equal(chunkText(t.updates), TEXT, "agent_message_chunk text");
    const kinds = t.updates.map((u) => u.sessionUpdate);
    const lastThought = kinds.lastIndexOf("agent_thought_chunk");
    const firstText = kinds.indexOf("agent_message_chunk");
    assert.ok(lastThought < firstText, `thought chunks should precede message chunks: ${JSON.stringify(kinds)}`);
    assert.deepEqual(t.late, [], `conversation updates after the prompt response: ${JSON.stringify(t.late)}`);
  }));

test("prompt: two turns in a row on one session", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession();
    const t1 = await a.turn(sessionId, "hello");
    const t2 = await a.turn(sessionId, "hello again");
    assert.equal(t1.response.stopReason, "end_turn");
    assert.equal(t2.response.stopReason, "end_turn");
    assert.equal(chunkText(t2.updates), TEXT, "second turn text");
  }));
