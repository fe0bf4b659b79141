// Merge-back over ACP: a workflow's isolated writer is merged into the
// workspace when it is ready. In ask mode the merge is one question whose
// content is the diff of every file it writes; when the client offers
// fs/write_text_file, the merge writes the text through it, so the editor
// sees the edit as its own. Every message is schema-checked by the harness.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acp, withFixture, toolCalls, finalToolState, TEST_TIMEOUT_MS } from "../harness.mjs";

const WORKFLOW = { name: "land", steps: [{ id: "fix", task: "[write] Fix src/a.txt.", write_set: ["src/**"] }] };

const SCRIPT = `
[[rule]]
name = "parent"
match = "^land the fix$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = ${JSON.stringify(JSON.stringify(WORKFLOW))}
  [[rule.reply]]
  text = "The workflow ended {{field \\"output.status\\" .ToolResult}}."

[[rule]]
name = "writer step"
match = '\\[write\\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "src/a.txt" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "src/a.txt", content = "fixed\\n" }
  [[rule.reply]]
  text = "Fixed it."
`;

test("merge-back: one question with the diff in ask mode, written through fs/write_text_file", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;
    const target = join(ws, "src", "a.txt");
    mkdirSync(join(ws, "src"), { recursive: true });
    writeFileSync(target, "broken\n");

    const a = await f.start(SCRIPT, { init: false });
    await a.initialize({ clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false } });
    const { sessionId } = await a.newSession(ws);
    await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "ask" });
    const t = await a.turn(sessionId, "land the fix");
    assert.equal(t.response.stopReason, "end_turn");

    // One question for the merge, about the step's child, showing the diff.
    const merges = a.permissionRequests.filter((r) => r.params.toolCall.title?.startsWith("Merge "));
    assert.equal(merges.length, 1, `one merge question: ${JSON.stringify(a.permissionRequests.map((r) => r.params.toolCall.title))}`);
    const q = merges[0].params.toolCall;
    assert.match(q.toolCallId, /^subagent-sa-/);
    assert.deepEqual(q.content, [{ type: "diff", path: target, oldText: "broken\n", newText: "fixed\n" }]);

    // Written through the editor, after the question was answered.
    const writes = a.wire.filter((w) => w.dir === "agent" && w.msg?.method === "fs/write_text_file");
    assert.equal(writes.length, 1, `one fs/write_text_file: ${JSON.stringify(writes)}`);
    assert.deepEqual(writes[0].msg.params, { sessionId, path: target, content: "fixed\n" });
    assert.ok(writes[0].seq > merges[0].seq, "the write follows the question");
    assert.equal(readFileSync(target, "utf8"), "fixed\n");

    // The outcome says it was merged.
    const wf = toolCalls(t.updates).find((c) => c.rawInput?.steps !== undefined);
    const fin = finalToolState(t.updates, wf.toolCallId);
    assert.equal(fin.status, "completed");
    const step = fin.rawOutput.output.steps[0];
    assert.equal(step.merge.status, "merged", JSON.stringify(step.merge));
    assert.deepEqual(step.merge.applied, { updated: ["src/a.txt"] });
  }));
