// Many sessions on one connection, as a multi-tab editor drives Pixir:
// what one session's end does to the questions it left open.

import { test } from "node:test";
import assert from "node:assert/strict";
import { withFixture, acpUnstable, TEST_TIMEOUT_MS } from "../harness.mjs";

const NATIVE_CAPS = { fs: { readTextFile: false, writeTextFile: false }, terminal: false, subagents: {}, plan: {} };
const UNANSWERED = `
[[rule]]
match = "^write it$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "mine.txt", content = "x" }
  [[rule.reply]]
  text = "wrote"
[[rule]]
match = "^delegate it$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child writes", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 60000 }
  [[rule.reply]]
  text = "delegated"
[[rule]]
match = "^child writes"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "child.txt", content = "x" }
  [[rule.reply]]
  text = "wrote"
`;

// A permission request Pixir stops waiting for without the client having
// cancelled the session it names is withdrawn with $/cancel_request, so
// the editor takes its question down: the session was closed (ACP asks a
// client to answer its pending requests after session/cancel only), or
// the request was a child's and the parent's turn was cancelled.
test("permission requests of a closed session, or of a child whose parent was cancelled, are withdrawn", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await f.start(UNANSWERED, { init: false, unstable: true });
    await a.initialize({ clientCapabilities: NATIVE_CAPS });
    const m = acpUnstable.methods.agent.session;
    a.permission = (params) => (params.toolCall.title?.startsWith("Spawn") ? { outcome: { outcome: "selected", optionId: "allow_once" } } : new Promise(() => {}));
    const withdrawn = (id) => a.agentMessages.some((w) => w.msg.method === "$/cancel_request" && w.msg.params.requestId === id);
    const asked = (sid) => a.wire.find((w) => w.dir === "agent" && w.msg.method === "session/request_permission" && w.msg.params.sessionId === sid && !w.msg.params.toolCall.title?.startsWith("Spawn"));

    const one = (await a.newSession(f.sandbox.workspace)).sessionId;
    await a.request(m.setMode, { sessionId: one, modeId: "ask" });
    const t1 = a.startTurn(one, "write it");
    const q1 = await a.waitFor(() => asked(one), "the write's question");
    await a.request(m.close, { sessionId: one });
    assert.equal((await t1.done).response.stopReason, "cancelled");
    await a.waitFor(() => withdrawn(q1.msg.id), "the closed session's question withdrawn");

    const two = (await a.newSession(f.sandbox.workspace)).sessionId;
    await a.request(m.setMode, { sessionId: two, modeId: "ask" });
    const t2 = a.startTurn(two, "delegate it");
    const child = await a.waitFor(() => a.wireUpdates(two).find((u) => u.update.sessionUpdate === "subagent_update")?.update.sessionId, "the child");
    const q2 = await a.waitFor(() => asked(child), "the child's question");
    await a.cancel(two);
    assert.equal((await t2.done).response.stopReason, "cancelled");
    await a.waitFor(() => withdrawn(q2.msg.id), "the child's question withdrawn");
  }));
