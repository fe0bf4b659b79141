// Scenario 4: a prompt that makes tool calls (write, then read), and prompts
// carrying embedded context (resource, resource_link).

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  withFixture, chunkText, toolCalls, toolCallUpdates, finalToolState, TEST_TIMEOUT_MS,
} from "../harness.mjs";

const FINAL = "Wrote notes.txt and read it back.";

const SCRIPT = `
[[rule]]
match = "(?i)notes"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "notes.txt", content = "hi\\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "notes.txt" }
  [[rule.reply]]
  text = ${JSON.stringify(FINAL)}

[[rule]]
match = "(?i)attached"
  [[rule.reply]]
  text = "I see the attachments."

[[rule]]
  [[rule.reply]]
  text = "fallback"
`;

/** Statuses a tool call goes through, in order, consecutive duplicates removed. */
function statusTrail(updates, id) {
  const trail = [];
  for (const u of toolCallUpdates(updates, id)) {
    if (u.status == null) continue;
    if (trail[trail.length - 1] !== u.status) trail.push(u.status);
  }
  return trail;
}

test("prompt with tool calls: write then read, lifecycle, diff, file on disk", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const ws = f.sandbox.workspace;
    const { sessionId } = await a.newSession(ws);
    const t = await a.turn(sessionId, "write notes then read them");
    const ups = t.updates;
    assert.equal(t.response.stopReason, "end_turn", `stopReason: ${JSON.stringify(t.response)}`);

    const calls = toolCalls(ups);
    assert.equal(calls.length, 2, `expected 2 tool_call updates (write, read), got ${calls.length}: ${JSON.stringify(calls)}`);
    const [w, r] = calls;
    assert.notEqual(w.toolCallId, r.toolCallId, "tool calls share an id");

    for (const [call, kind, label] of [[w, "edit", "write"], [r, "read", "read"]]) {
      assert.equal(call.status, "pending", `${label} tool_call status: ${JSON.stringify(call)}`);
      assert.equal(call.kind, kind, `${label} tool_call kind: ${JSON.stringify(call)}`);
      assert.equal(typeof call.title, "string", `${label} tool_call title: ${JSON.stringify(call)}`);
      assert.ok(call.title.length > 0, `${label} tool_call title is empty`);
      assert.ok(call.rawInput && typeof call.rawInput === "object", `${label} tool_call rawInput: ${JSON.stringify(call)}`);
      assert.match(String(call.rawInput.path), /notes\.txt$/, `${label} rawInput.path: ${JSON.stringify(call.rawInput)}`);
      for (const loc of call.locations ?? []) assert.ok(isAbsolute(loc.path), `${label} location path must be absolute: ${JSON.stringify(loc)}`);
      // First update for the id is the tool_call itself.
      assert.equal(toolCallUpdates(ups, call.toolCallId)[0].sessionUpdate, "tool_call", `${label}: a tool_call_update preceded its tool_call`);
      assert.deepEqual(statusTrail(ups, call.toolCallId), ["pending", "in_progress", "completed"],
        `${label} status sequence; updates: ${JSON.stringify(toolCallUpdates(ups, call.toolCallId))}`);
    }
    assert.equal(w.rawInput.content, "hi\n", `write rawInput.content: ${JSON.stringify(w.rawInput)}`);

    // The write's completed state carries a diff for notes.txt (absolute path).
    const wFinal = finalToolState(ups, w.toolCallId);
    const diffs = (wFinal.content ?? []).filter((c) => c.type === "diff");
    assert.equal(diffs.length, 1, `write final content should have one diff item: ${JSON.stringify(wFinal.content)}`);
    assert.equal(diffs[0].path, join(ws, "notes.txt"), `diff path must be the absolute path of notes.txt: ${JSON.stringify(diffs[0])}`);
    assert.equal(diffs[0].newText, "hi\n", `diff newText: ${JSON.stringify(diffs[0])}`);

    // Order: write finishes before the read starts; final text after the read completes.
    const idx = (pred) => ups.findIndex(pred);
    const wDone = idx((u) => u.toolCallId === w.toolCallId && u.status === "completed");
    const rStart = idx((u) => u.sessionUpdate === "tool_call" && u.toolCallId === r.toolCallId);
    const rDone = idx((u) => u.toolCallId === r.toolCallId && u.status === "completed");
    const firstText = idx((u) => u.sessionUpdate === "agent_message_chunk");
    assert.ok(wDone < rStart, `write should complete before the read starts (${wDone} vs ${rStart})`);
    assert.ok(firstText > rDone, `final text should come after the read completes (${firstText} vs ${rDone})`);

    assert.equal(chunkText(ups), FINAL, "final streamed text");
    assert.ok(existsSync(join(ws, "notes.txt")), "notes.txt was not created in the workspace");
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "hi\n", "notes.txt content");
    assert.deepEqual(t.late, [], `conversation updates after the prompt response: ${JSON.stringify(t.late)}`);
  }));

test("prompt with embedded context: text + resource_link + resource", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const ws = f.sandbox.workspace;
    const file = join(ws, "README.md");
    writeFileSync(file, "# Readme\n");
    const { sessionId } = await a.newSession(ws);
    const uri = pathToFileURL(file).href;
    const t = await a.turn(sessionId, [
      { type: "text", text: "Look at the attached files." },
      { type: "resource_link", uri, name: "README.md", mimeType: "text/markdown" },
      { type: "resource", resource: { uri: pathToFileURL(join(ws, "snippet.go")).href, mimeType: "text/x-go", text: "package main\n" } },
    ]);
    assert.equal(t.response.stopReason, "end_turn", `stopReason: ${JSON.stringify(t.response)}`);
    assert.equal(chunkText(t.updates), "I see the attachments.", "streamed text");
  }));
