// Many sessions on one connection, as a multi-tab editor drives Pixir:
// what one session's end does to the questions it left open.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
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

const TABS = `
[[rule]]
match = '^tab \\w+$'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "hang shared", workspace_mode = "shared" }
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "hang isolated", workspace_mode = "isolated" }
  [[rule.reply]]
  hang = true
[[rule]]
match = "^hang"
  [[rule.reply]]
  hang = true
[[rule]]
  [[rule.reply]]
  text = "ok {{.User}}"
`;

// Five tabs in two workspaces (three on one folder), each with a turn
// running and two children (a shared and an isolated writer) at once:
// every update names its own session or one of its own children; a cancel,
// a load and a close of one tab touch that tab only.
test("five tabs at once: updates, cancel, load and close stay with their own session", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const w1 = join(f.sandbox.root, "w1");
    const w2 = join(f.sandbox.root, "w2");
    for (const w of [w1, w2]) mkdirSync(w);
    const a = await f.start(TABS, { init: false, unstable: true, extraArgs: ["--max-threads", "10"] });
    await a.initialize({ clientCapabilities: NATIVE_CAPS });
    const m = acpUnstable.methods.agent.session;
    const subs = (sid) => a.wireUpdates(sid).filter((u) => u.update.sessionUpdate === "subagent_update").map((u) => u.update);
    const state = (sid, child) => subs(sid).filter((u) => u.sessionId === child && u.state).at(-1)?.state;
    const kidsOf = (sid) => [...new Set(subs(sid).map((u) => u.sessionId))];

    const tabs = [];
    for (const w of [w1, w1, w1, w2, w2]) tabs.push((await a.newSession(w)).sessionId);
    const turns = tabs.map((sid, i) => a.startTurn(sid, `tab t${i}`));
    for (const sid of tabs) await a.waitFor(() => kidsOf(sid).length === 2 && kidsOf(sid).every((c) => state(sid, c)?.state === "running"), `the children of ${sid} running`);
    const kids = new Map(tabs.map((sid) => [sid, kidsOf(sid)]));
    const owner = new Map([...kids].flatMap(([sid, cs]) => [[sid, sid], ...cs.map((c) => [c, sid])]));
    assert.equal(owner.size, 15, "fifteen distinct sessions");
    const stray = () => a.agentMessages.filter((w) => w.msg.method === "session/update" && !owner.has(w.msg.params.sessionId));
    const runningTabs = () => tabs.filter((sid) => kids.get(sid).every((c) => state(sid, c)?.state === "running"));

    await a.cancel(tabs[0]);
    assert.equal((await turns[0].done).response.stopReason, "cancelled");
    await a.waitFor(() => kids.get(tabs[0]).every((c) => state(tabs[0], c)?.stopReason === "cancelled"), "tab 0's children cancelled");
    assert.deepEqual(runningTabs(), tabs.slice(1), "the other tabs' children run on");

    const before = a.wire.length;
    await a.request(m.load, { sessionId: tabs[1], cwd: w1, mcpServers: [] });
    const during = a.wire.slice(before).filter((w) => w.dir === "agent" && w.msg.method === "session/update");
    assert.deepEqual([...new Set(during.map((w) => owner.get(w.msg.params.sessionId)))], [tabs[1]], "the load replays tab 1 only");

    await a.request(m.close, { sessionId: tabs[2] });
    assert.equal((await turns[2].done).response.stopReason, "cancelled");
    await a.waitFor(() => kids.get(tabs[2]).every((c) => state(tabs[2], c)?.state === "idle"), "tab 2's children stopped");
    assert.deepEqual(runningTabs(), [tabs[1], tabs[3], tabs[4]]);

    for (const i of [1, 3, 4]) {
      await a.cancel(tabs[i]);
      assert.equal((await turns[i].done).response.stopReason, "cancelled");
    }
    assert.deepEqual(stray(), [], "every update names a tab or one of its children");
  }));
