// Scenario 8: session modes — read_only denies writes, ask asks permission.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { acp, withFixture, selectKind, toolCalls, finalToolState, toolContentText, TEST_TIMEOUT_MS } from "../harness.mjs";

const writeRule = (word) => `
[[rule]]
match = "(?i)${word}"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "${word}.txt", content = "${word}\\n" }
  [[rule.reply]]
  text = "done with ${word}"
`;

const SCRIPT = ["blocked", "rejected", "allowed"].map(writeRule).join("") + `
[[rule]]
  [[rule.reply]]
  text = "fallback"
`;

/** The single tool call of a turn and its final state. */
function onlyToolCall(t, label) {
  const calls = toolCalls(t.updates);
  assert.equal(calls.length, 1, `${label}: expected one tool_call, got ${JSON.stringify(t.updates)}`);
  return { call: calls[0], final: finalToolState(t.updates, calls[0].toolCallId) };
}

test("modes: read_only denies writes; ask requests permission; unknown mode is -32602", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(ws);

    // set_mode read_only -> {} and a current_mode_update.
    const r = await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "read_only" });
    assert.deepEqual(r, {}, `session/set_mode result: ${JSON.stringify(r)}`);
    await a.waitFor(
      () => a.updates(sessionId).some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "read_only"),
      "current_mode_update {currentModeId: read_only}", 5000,
    );

    // A write in read_only fails with "permission denied" and writes nothing.
    const permsBefore = a.permissionRequests.length;
    const t1 = await a.turn(sessionId, "write blocked");
    assert.equal(t1.response.stopReason, "end_turn", `read_only turn stopReason: ${JSON.stringify(t1.response)}`);
    const b = onlyToolCall(t1, "read_only write");
    assert.equal(b.final.status, "failed", `read_only write final state: ${JSON.stringify(b.final)}`);
    assert.match(toolContentText(b.final.content), /permission[ _]denied/i, `read_only write failure text: ${JSON.stringify(b.final)}`);
    assert.ok(!existsSync(join(ws, "blocked.txt")), "blocked.txt was written in read_only mode");
    assert.equal(a.permissionRequests.length, permsBefore, "read_only mode should deny without asking for permission");

    // set_config_option mode=ask -> full configOptions with mode currentValue "ask".
    const c = await a.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "ask" });
    const byId = Object.fromEntries((c.configOptions ?? []).map((o) => [o.id, o]));
    assert.equal(byId.mode?.currentValue, "ask", `set_config_option mode: ${JSON.stringify(c)}`);
    assert.ok(byId.model, `set_config_option must answer the full set (model missing): ${JSON.stringify(c)}`);

    // ask + reject_once -> permission request after the tool_call, call fails, nothing written.
    a.permission = selectKind("reject_once");
    const n0 = a.permissionRequests.length;
    const t2 = await a.turn(sessionId, "write rejected");
    assert.equal(a.permissionRequests.length, n0 + 1, `expected one session/request_permission in ask mode, got ${a.permissionRequests.length - n0}`);
    const pr = a.permissionRequests[n0];
    const kinds = pr.params.options.map((o) => o.kind);
    for (const k of ["allow_once", "allow_always", "reject_once"]) assert.ok(kinds.includes(k), `permission options lack ${k}: ${JSON.stringify(pr.params.options)}`);
    const rej = onlyToolCall(t2, "rejected write");
    assert.equal(pr.params.toolCall.toolCallId, rej.call.toolCallId, `permission toolCall.toolCallId ${pr.params.toolCall.toolCallId} does not match the tool_call ${rej.call.toolCallId}`);
    const toolCallSeq = t2.wireUpdates.find((w) => w.update.sessionUpdate === "tool_call" && w.update.toolCallId === rej.call.toolCallId)?.seq;
    assert.ok(toolCallSeq !== undefined && toolCallSeq < pr.seq,
      `the tool_call update (wire #${toolCallSeq}) must be sent BEFORE session/request_permission (wire #${pr.seq})`);
    assert.equal(rej.final.status, "failed", `rejected write final state: ${JSON.stringify(rej.final)}`);
    assert.ok(!existsSync(join(ws, "rejected.txt")), "rejected.txt was written although permission was rejected");
    assert.equal(t2.response.stopReason, "end_turn", `rejected turn stopReason: ${JSON.stringify(t2.response)}`);

    // ask + allow_once -> written.
    a.permission = selectKind("allow_once");
    const n1 = a.permissionRequests.length;
    const t3 = await a.turn(sessionId, "write allowed");
    assert.equal(a.permissionRequests.length, n1 + 1, "expected one session/request_permission for the allowed write");
    const al = onlyToolCall(t3, "allowed write");
    assert.equal(al.final.status, "completed", `allowed write final state: ${JSON.stringify(al.final)}`);
    assert.ok(existsSync(join(ws, "allowed.txt")), "allowed.txt was not written although permission was granted");
    assert.equal(readFileSync(join(ws, "allowed.txt"), "utf8"), "allowed\n");
    assert.equal(t3.response.stopReason, "end_turn");

    // Unknown mode id -> -32602.
    const { error, result } = await a.requestError(acp.methods.agent.session.setMode, { sessionId, modeId: "no_such_mode" });
    assert.ok(error, `set_mode to an unknown mode succeeded: ${JSON.stringify(result)}`);
    assert.equal(error.code, -32602, `unknown mode error code: ${JSON.stringify({ code: error.code, message: error.message })}`);
  }));

test("ask: \"always allow\" holds for the session after session/load and session/resume in a fresh process; allow once does not", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    // Before the fix, the grant lived only in the process that was told it:
    // an editor restarted (which loads its threads) asked again.
    const bash = `
[[rule]]
match = "^run (\\\\w+)$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "echo ran >> ran.txt" }
  [[rule.reply]]
  text = "ran"
`;
    const script = bash + writeRule("later") + SCRIPT;
    const a = await f.start(script);
    const { sessionId } = await a.newSession();
    await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "ask" });
    a.permission = selectKind("allow_always");
    await a.turn(sessionId, "run one");
    a.permission = selectKind("allow_once");
    await a.turn(sessionId, "allowed");
    assert.equal(a.permissionRequests.length, 2);
    await a.close();

    for (const method of [acp.methods.agent.session.load, acp.methods.agent.session.resume]) {
      const b = await f.start(script);
      await b.request(method, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
      const t = await b.turn(sessionId, "run two");
      assert.equal(finalToolState(t.updates, toolCalls(t.updates)[0].toolCallId).status, "completed");
      assert.deepEqual(b.permissionRequests.map((r) => r.params.toolCall.title), [], `${method}: bash was always allowed`);
      // write was allowed once only: it asks again.
      await b.turn(sessionId, "later");
      assert.equal(b.permissionRequests.length, 1, `${method}: write was allowed once, so it asks`);
      await b.close();
    }
    assert.equal(readFileSync(join(f.sandbox.workspace, "ran.txt"), "utf8"), "ran\nran\nran\n");
  }));
