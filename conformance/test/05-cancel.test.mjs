// Scenario 5: session/cancel mid-turn resolves the prompt with stopReason "cancelled".

import { test } from "node:test";
import assert from "node:assert/strict";
import { withFixture, chunkText, TEST_TIMEOUT_MS } from "../harness.mjs";

const SLOW = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");

// "hang" first calls a tool, so the client sees the turn running (an event to
// wait for, not a guess at how long starting it takes), then hangs in its
// next model call.
const SCRIPT = `
[[rule]]
match = "(?i)hang"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "glob"
  arguments = { pattern = "*.none" }
  [[rule.reply]]
  hang = true

[[rule]]
match = "(?i)slow"
  [[rule.reply]]
  text = ${JSON.stringify(SLOW)}
  chunk_delay_ms = 100

[[rule]]
  [[rule.reply]]
  text = "Back again."
`;

test("cancel a hanging turn: prompt resolves cancelled, next prompt works", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession();
    const turn = a.startTurn(sessionId, "please hang");
    await a.waitFor(() => turn.updatesSoFar().some((u) => u.sessionUpdate === "tool_call"), "the turn's first tool call");
    await a.cancel(sessionId);
    const t = await turn.done; // must resolve, not reject
    assert.equal(t.response.stopReason, "cancelled", `stopReason: ${JSON.stringify(t.response)}`);
    assert.deepEqual(t.late, [], `conversation updates after the cancelled prompt's response: ${JSON.stringify(t.late)}`);

    const t2 = await a.turn(sessionId, "hello");
    assert.equal(t2.response.stopReason, "end_turn", `stopReason after cancel: ${JSON.stringify(t2.response)}`);
    assert.equal(chunkText(t2.updates), "Back again.", "text of the turn after cancel");
  }));

test("cancel a slowly streaming turn: partial text, cancelled, next prompt works", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession();
    const turn = a.startTurn(sessionId, "go slow");
    await a.waitFor(() => turn.updatesSoFar().some((u) => u.sessionUpdate === "agent_message_chunk"), "the first agent_message_chunk");
    await a.cancel(sessionId);
    const t = await turn.done;
    assert.equal(t.response.stopReason, "cancelled", `stopReason: ${JSON.stringify(t.response)}`);
    const text = chunkText(t.updates);
    assert.ok(text.length > 0 && text.length < SLOW.length && SLOW.startsWith(text),
      `streamed text should be a strict prefix of the script text, got ${JSON.stringify(text)}`);
    assert.deepEqual(t.late, [], `conversation updates after the cancelled prompt's response: ${JSON.stringify(t.late)}`);

    const t2 = await a.turn(sessionId, "hello");
    assert.equal(t2.response.stopReason, "end_turn", `stopReason after cancel: ${JSON.stringify(t2.response)}`);
    assert.equal(chunkText(t2.updates), "Back again.", "text of the turn after cancel");
  }));
