// What ACP clients nobody here wrote revealed (issue 16): acpx 0.19.1, the Go
// SDK (coder/acp-go-sdk 0.13.0), acp-factory 0.1.14 and the older
// @zed-industries/agent-client-protocol 0.4.5. Each test makes the official
// client behave like the one that found the problem, and checks the fix.

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import {
  acp,
  withFixture,
  selectKind,
  toolCalls,
  finalToolState,
  toolContentText,
  chunkText,
  readFileLines,
  sleep,
  TEST_TIMEOUT_MS,
} from "../harness.mjs";

const FS = { clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false } };

const SCRIPT = `
[[rule]]
match = "^write new$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "fresh/new.txt", content = "created through the editor\\n" }
  [[rule.reply]]
  text = "wrote it"

[[rule]]
match = "^read big$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "big.txt" }
  [[rule.reply]]
  text = "read it"

[[rule]]
match = "^read some$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "lines.txt", offset = 3, limit = 2 }
  [[rule.reply]]
  text = "{{.ToolResult}}"

[[rule]]
match = "^ping"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "glob"
  arguments = { pattern = "*.txt" }
  [[rule.reply]]
  text = "pong"

[[rule]]
match = "^hang$"
  [[rule.reply]]
  text = "Hanging."
  [[rule.reply.tool_calls]]
  name = "glob"
  arguments = { pattern = "*.none" }
  [[rule.reply]]
  hang = true

[[rule]]
match = "^edit big$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "edit"
  arguments = { path = "big.txt", old_text = "NEEDLE", new_text = "FOUND" }
  [[rule.reply]]
  text = "edited"

[[rule]]
match = "^ask twice$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "asked.txt", content = "new\\n" }
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "echo first line\\necho second line" }
  [[rule.reply]]
  text = "asked"

[[rule]]
match = "^write then hang$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "then.txt", content = "x\\n" }
  [[rule.reply]]
  hang = true

[[rule]]
match = "."
  [[rule.reply]]
  text = "ok"
`;

// acp-factory answers fs/read_text_file for a missing file with -32603 and
// "ENOENT" in data, not -32002: the pre-read of a new file failed, and the
// write was never sent.
test("acp-factory: a missing file read as -32603 with ENOENT in data does not stop a write", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;
    const a = await f.start(SCRIPT, {
      init: false,
      readTextFile: async (params) => {
        if (!existsSync(params.path)) {
          throw new acp.RequestError(-32603, "Internal error", { details: `ENOENT: no such file or directory, open '${params.path}'` });
        }
        return readFileLines(params);
      },
    });
    await a.initialize(FS);
    const { sessionId } = await a.newSession(ws);
    const t = await a.turn(sessionId, "write new");
    const call = toolCalls(t.updates)[0];
    assert.equal(finalToolState(t.updates, call.toolCallId).status, "completed", JSON.stringify(t.updates));
    assert.equal(readFileSync(join(ws, "fresh/new.txt"), "utf8"), "created through the editor\n");
    assert.ok(a.fsCalls.some((c) => c.method === "fs/write_text_file"), "the write went through the editor");
  }));

// An editor that answers with more than one message may carry: the line is
// refused, and the read it answers fails at once instead of hanging the
// turn. The read asked for a bounded range of lines, which this editor
// ignores.
test("an fs/read_text_file answer over the line limit fails the read; reads ask for line and limit", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;
    writeFileSync(join(ws, "big.txt"), "small on disk\n");
    writeFileSync(join(ws, "lines.txt"), "l1\nl2\nl3\nl4\nl5\nl6\n");
    const huge = ("x".repeat(1023) + "\n").repeat(65 * 1024); // 65 MiB
    const a = await f.start(SCRIPT, {
      init: false,
      readTextFile: async (params) => (params.path.endsWith("big.txt") ? { content: huge } : readFileLines(params)),
    });
    await a.initialize(FS);
    const { sessionId } = await a.newSession(ws);

    const t = await a.turn(sessionId, "read big");
    assert.equal(t.response.stopReason, "end_turn");
    const call = toolCalls(t.updates)[0];
    const end = finalToolState(t.updates, call.toolCallId);
    assert.equal(end.status, "failed");
    assert.match(toolContentText(end.content), /larger than one message may be/);
    const read = a.fsCalls.find((c) => c.method === "fs/read_text_file");
    assert.ok(read.params.line >= 1 && read.params.limit > 0, `a bounded read: ${JSON.stringify(read.params)}`);

    const some = await a.turn(sessionId, "read some");
    const asked = a.fsCalls.filter((c) => c.method === "fs/read_text_file").at(-1).params;
    assert.equal(asked.line, 3);
    assert.equal(asked.limit, 3, "the range asked for, and one line more to know whether more follow");
    const result = JSON.parse(chunkText(some.updates));
    assert.deepEqual(
      { content: result.output.content, start: result.output.start_line, end: result.output.end_line, more: result.output.more },
      { content: "l3\nl4\n", start: 3, end: 4, more: true },
    );
  }));

// The scripted provider, like several real ones, numbers its calls afresh
// each turn (call_1_1): acpx saw 17 tool calls with 6 distinct ids in one
// replay. Ids are unique within the session, live and replayed.
test("acpx: tool call ids are unique within a session, live and after load", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(ws);
    const live = [];
    for (const p of ["ping one", "ping two", "ping three"]) {
      const t = await a.turn(sessionId, p);
      live.push(...toolCalls(t.updates).map((c) => c.toolCallId));
    }
    assert.equal(live.length, 3);
    assert.equal(new Set(live).size, 3, `distinct ids: ${live}`);
    await a.close();

    const b = await f.start(SCRIPT);
    await b.request(acp.methods.agent.session.load, { sessionId, cwd: ws, mcpServers: [] });
    const replayed = toolCalls(b.updates(sessionId)).map((c) => c.toolCallId);
    assert.deepEqual(replayed, live);
    const t = await b.turn(sessionId, "ping four");
    const next = toolCalls(t.updates)[0].toolCallId;
    assert.ok(!live.includes(next), `a new id after load: ${next}`);
  }));

// The Go SDK sends session/cancel and the next prompt within a
// millisecond: the prompt waits for the cancelled turn (it was refused
// with -32600), and nothing of the new turn comes before the cancelled
// turn's answer.
test("Go SDK: a prompt sent right after session/cancel runs after the cancelled turn", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    for (let i = 0; i < 3; i++) {
      const first = a.startTurn(sessionId, "hang");
      await a.waitFor(() => first.updatesSoFar().some((u) => u.sessionUpdate === "agent_message_chunk"), "the turn to start");
      a.cancel(sessionId);
      const second = a.startTurn(sessionId, `after cancel ${i}`);
      const [r1, r2] = await Promise.all([first.done, second.done]);
      assert.equal(r1.response.stopReason, "cancelled");
      assert.equal(r2.response.stopReason, "end_turn");
      assert.ok(r1.responseSeq < r2.responseSeq);
      const firstOfSecond = r2.wireUpdates.find((u) => u.update.sessionUpdate === "agent_message_chunk");
      assert.ok(firstOfSecond.seq > r1.responseSeq, "the new turn's text comes after the cancelled turn's answer");
    }
  }));

// A 6 MiB edit sent its whole old and new text in one 12 MiB line, which
// the Go SDK's reader refuses (it disconnected). The diff carries the
// changed region with some context; the file is edited whole.
test("Go SDK: a diff of a 6 MiB file carries hunks, and no line is megabytes", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;
    const lines = [];
    for (let i = 0; i < 200_000; i++) lines.push(`line ${i} ${"-".repeat(20)}`);
    lines[100_000] = "the NEEDLE line";
    writeFileSync(join(ws, "big.txt"), lines.join("\n") + "\n");
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(ws);
    const t = await a.turn(sessionId, "edit big");
    const call = toolCalls(t.updates)[0];
    const end = finalToolState(t.updates, call.toolCallId);
    assert.equal(end.status, "completed");
    const diffs = end.content.filter((c) => c.type === "diff");
    assert.equal(diffs.length, 1);
    assert.match(diffs[0].oldText, /the NEEDLE line/);
    assert.match(diffs[0].newText, /the FOUND line/);
    assert.ok(diffs[0].oldText.length < 1000, `a hunk, not the file: ${diffs[0].oldText.length} bytes`);
    assert.match(readFileSync(join(ws, "big.txt"), "utf8"), /the FOUND line/);
    const longest = Math.max(...a.agentMessages.map((w) => JSON.stringify(w.msg).length));
    assert.ok(longest < 1 << 20, `the longest line the agent wrote is ${longest} bytes`);
  }));

// Permission requests carried no content: the user approved an edit or a
// command without seeing it.
test("permission requests carry the diff of an edit and the whole command", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    a.permission = selectKind("allow_once");
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "ask" });
    await a.turn(sessionId, "ask twice");
    assert.equal(a.permissionRequests.length, 2);
    const [write, bash] = a.permissionRequests.map((r) => r.params.toolCall);
    assert.deepEqual(
      write.content.filter((c) => c.type === "diff").map((c) => ({ path: c.path, newText: c.newText })),
      [{ path: join(f.sandbox.workspace, "asked.txt"), newText: "new\n" }],
    );
    assert.match(toolContentText(bash.content), /echo first line\necho second line/);
  }));

// A permission the client answered while it cancelled the turn (the Go
// SDK cancels and answers back to back, in either order; ACP says a
// client answers its pending permission requests after session/cancel):
// the answered request was sent $/cancel_request anyway.
test("Go SDK: no $/cancel_request for a permission the client answered", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "ask" });
    for (let i = 0; i < 6; i++) {
      a.permission = async (params) => {
        if (i % 2 === 0) {
          a.cancel(sessionId); // before the answer
          return { outcome: { outcome: "cancelled" } };
        }
        setImmediate(() => a.cancel(sessionId)); // right behind the answer
        return selectKind("allow_once")(params);
      };
      const t = await a.turn(sessionId, "write then hang");
      assert.equal(t.response.stopReason, "cancelled");
    }
    const answered = new Set(
      a.wire.filter((w) => w.dir === "agent" && w.msg.method === "session/request_permission").map((w) => w.msg.id),
    );
    assert.equal(answered.size, 6);
    const cancels = a.agentMessages.filter((w) => w.msg.method === "$/cancel_request" && answered.has(w.msg.params.requestId));
    assert.deepEqual(cancels, [], "answered permission requests were cancelled");
  }));

// An editor that refuses a write (the user rejected it there): a
// permission refusal the model can act on, not Pixir's internal error.
test("a client's refusal of fs/write_text_file is a permission refusal", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;
    const a = await f.start(SCRIPT, {
      init: false,
      writeTextFile: async () => {
        throw new acp.RequestError(-32603, "The user rejected the change");
      },
      readTextFile: async (params) => {
        if (!existsSync(params.path)) throw acp.RequestError.resourceNotFound(params.path);
        return readFileLines(params);
      },
    });
    await a.initialize(FS);
    const { sessionId } = await a.newSession(ws);
    const t = await a.turn(sessionId, "write new");
    const end = finalToolState(t.updates, toolCalls(t.updates)[0].toolCallId);
    assert.equal(end.status, "failed");
    assert.equal(end.rawOutput.error.kind, "permission_denied", JSON.stringify(end.rawOutput));
    assert.match(end.rawOutput.error.message, /The user rejected the change/);
    assert.ok(!existsSync(join(ws, "fresh/new.txt")));
  }));

// The same session_info_update came after every turn.
test("session_info_update is sent when the title changes, not after every turn", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    for (const p of ["hello there", "and again", "once more"]) await a.turn(sessionId, p);
    await sleep(50);
    const infos = a.updates(sessionId).filter((u) => u.sessionUpdate === "session_info_update");
    assert.equal(infos.length, 1, JSON.stringify(infos));
    assert.equal(infos[0].title, "hello there");
  }));
