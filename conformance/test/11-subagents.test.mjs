// Subagents over ACP: a turn spawns three children and waits for them; each
// child is its own tool call (kind think) linked to the call that spawned
// it, with progress and a terminal update, all schema-valid.

import { test } from "node:test";
import assert from "node:assert/strict";
import { acp, withFixture, selectKind, toolCalls, finalToolState, toolContentText, TEST_TIMEOUT_MS, fanOutScript } from "../harness.mjs";

const SCRIPT = fanOutScript(["child one", "child two", "child three"], { opening: "Spawning three children.", done: "All three are done." });

test("subagents: three children, each its own tool call with progress and a terminal update", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const t = await a.turn(sessionId, "fan out");
    assert.equal(t.response.stopReason, "end_turn");
    assert.deepEqual(t.late, [], "no conversation update after the prompt answered");

    const calls = toolCalls(t.updates);
    const spawns = calls.filter((c) => c.title.startsWith("Spawn"));
    const children = calls.filter((c) => c.toolCallId.startsWith("subagent-"));
    assert.equal(spawns.length, 3, `three spawn_agent calls: ${JSON.stringify(calls)}`);
    assert.equal(children.length, 3, `three child tool calls: ${JSON.stringify(calls)}`);

    const spawnIds = new Set(spawns.map((s) => s.toolCallId));
    for (const child of children) {
      assert.equal(child.kind, "think");
      assert.match(child.title, /^default: child (one|two|three)$/);
      assert.equal(child.status, "pending");
      const parent = child._meta?.pixir?.parentToolCallId;
      assert.ok(spawnIds.has(parent), `child ${child.toolCallId} links to its spawning call (got ${parent})`);

      const updates = t.updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === child.toolCallId);
      assert.ok(updates.some((u) => u.status === "in_progress"), `${child.title}: started`);
      assert.ok(updates.some((u) => !u.status && toolContentText(u.content).length > 0), `${child.title}: progress while it runs`);
      const final = finalToolState(t.updates, child.toolCallId);
      assert.equal(final.status, "completed", `${child.title}: ${JSON.stringify(final)}`);
      assert.match(toolContentText(final.content), /finished child (one|two|three)/);
    }

    const wait = calls.find((c) => c.title.startsWith("Wait"));
    assert.ok(wait, "the wait_agent call");
    assert.equal(finalToolState(t.updates, wait.toolCallId).status, "completed");
  }));

test("ask: a Subagent's question in its parent's session offers to always allow the tool for that Subagent, which is what it remembers", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    // Before the fix the option said "Always allow bash in this session",
    // in the parent's session, and the next child's bash asked again there.
    const a = await f.start(`
[[rule]]
match = "^fan out$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child one", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 60000 }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child two", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 60000 }
  [[rule.reply]]
  text = "both done"
[[rule]]
match = "^child"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "true" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "true" }
  [[rule.reply]]
  text = "finished"
`);
    const { sessionId } = await a.newSession();
    await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "ask" });
    a.permission = selectKind("allow_always");
    const t = await a.turn(sessionId, "fan out");
    assert.equal(t.response.stopReason, "end_turn");
    const asks = a.permissionRequests.map((r) => ({
      session: r.params.sessionId,
      child: r.params.toolCall.toolCallId.startsWith("subagent-"),
      always: r.params.options.find((o) => o.kind === "allow_always").name,
    }));
    // The parent's spawn_agent once (then remembered for the parent), each
    // child's bash once (then remembered for that child).
    assert.deepEqual(asks, [
      { session: sessionId, child: false, always: "Always allow spawn_agent in this session" },
      { session: sessionId, child: true, always: "Always allow bash for this subagent" },
      { session: sessionId, child: true, always: "Always allow bash for this subagent" },
    ]);
  }));
