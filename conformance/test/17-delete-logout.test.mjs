// session/delete and logout, stable v1 methods (issue 16): delete is
// advertised, removes the session's Log, metadata and its Subagents'
// folders (an isolated child's snapshot), and the session is gone from
// session/list; a running session is refused until it stops. logout is
// answered (Pixir has no sign-in) instead of "method not found". Notices:
// a client that advertises session.notices is told what it could not see
// otherwise when it opens a session (here, an agent file that is ignored).

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withFixture, acp, chunkText, TEST_TIMEOUT_MS } from "../harness.mjs";

const SCRIPT = `
[[rule]]
match = "^spawn a writer$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "write in your snapshot", workspace_mode = "isolated" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 15000 }
  [[rule.reply]]
  text = "done"
[[rule]]
match = "^write in your snapshot"
  [[rule.reply]]
  text = "nothing to write"
[[rule]]
match = "^hang$"
  [[rule.reply]]
  text = "working"
  [[rule.reply.tool_calls]]
  name = "list_agents"
  arguments = {}
  [[rule.reply]]
  hang = true
[[rule]]
match = "^hello$"
  [[rule.reply]]
  text = "hi"
`;

test("session/delete: advertised; removes the session's Log and its children's folders; gone from session/list", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT, { init: false });
    const init = await a.initialize();
    assert.deepEqual(init.agentCapabilities.sessionCapabilities.delete, {});

    const { sessionId } = await a.newSession(f.sandbox.workspace);
    await a.turn(sessionId, "spawn a writer");
    const keep = (await a.newSession(f.sandbox.workspace)).sessionId;
    await a.turn(keep, "hello");
    const state = join(f.sandbox.workspace, ".pixir");
    assert.ok(existsSync(join(state, "sessions", `${sessionId}.ndjson`)));
    const children = readdirSync(join(state, "subagents"));
    assert.equal(children.length, 1, "the isolated child's folder (its Log and snapshot)");

    const listed = await a.request(acp.methods.agent.session.list, { cwd: f.sandbox.workspace });
    assert.deepEqual(listed.sessions.map((s) => s.sessionId).sort(), [sessionId, keep].sort());

    assert.deepEqual(await a.request(acp.methods.agent.session.delete, { sessionId }), {});
    assert.ok(!existsSync(join(state, "sessions", `${sessionId}.ndjson`)), "its Log is gone");
    assert.ok(!existsSync(join(state, "sessions", `${sessionId}.json`)), "its metadata is gone");
    assert.deepEqual(readdirSync(join(state, "subagents")), [], "its child's folder is gone");
    const after = await a.request(acp.methods.agent.session.list, { cwd: f.sandbox.workspace });
    assert.deepEqual(after.sessions.map((s) => s.sessionId), [keep], "only the other session is listed");

    // It is gone for good: a load of it is refused.
    const load = await a.requestError(acp.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    assert.equal(load.error?.code, -32002, JSON.stringify(load));
  }));

test("session/delete: a running session is refused and stays; once it stopped, it is deleted", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const turn = a.startTurn(sessionId, "hang");
    await a.waitFor(() => turn.updatesSoFar().some((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed"), "the turn to run");
    const refused = await a.requestError(acp.methods.agent.session.delete, { sessionId });
    assert.equal(refused.error?.code, -32600, JSON.stringify(refused));
    assert.match(refused.error.message, /running.*cancel/);
    assert.ok(existsSync(join(f.sandbox.workspace, ".pixir", "sessions", `${sessionId}.ndjson`)), "nothing was removed");

    await a.cancel(sessionId);
    const t = await turn.done;
    assert.equal(t.response.stopReason, "cancelled");
    assert.deepEqual(await a.request(acp.methods.agent.session.delete, { sessionId }), {});
    const list = await a.request(acp.methods.agent.session.list, { cwd: f.sandbox.workspace });
    assert.deepEqual(list.sessions, []);
  }));

test("logout: answered, not 'method not found': Pixir has no sign-in", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const r = await a.request(acp.methods.agent.logout, {});
    assert.match(r._meta.pixir.note, /no sign-in/);
  }));

test("notices: agent file warnings are a notice to a client with session.notices, after session/new; nothing to one without", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const agents = join(f.sandbox.workspace, ".pixir", "agents");
    mkdirSync(agents, { recursive: true });
    writeFileSync(join(agents, "reviewer.md"), "not an agent file\n");

    const a = await f.start(SCRIPT, { init: false });
    await a.initialize({ clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, session: { notices: {} } } });
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const notice = await a.waitFor(() => a.updates(sessionId).find((u) => u.sessionUpdate === "notice" && /agent files/.test(u.title)), "the agent files notice");
    assert.equal(notice.severity, "warning");
    assert.match(notice.description, /reviewer\.md: ignored: not a \.toml file/);
    const seq = a.wireUpdates(sessionId).find((u) => u.update.sessionUpdate === "notice" && /agent files/.test(u.update.title))?.seq;
    assert.ok(seq > a.responseSeq("session/new"), "sent once session/new has answered");

    const b = await f.start(SCRIPT);
    const other = await b.newSession(f.sandbox.workspace);
    const t = await b.turn(other.sessionId, "hello");
    assert.ok(!b.updates(other.sessionId).some((u) => u.sessionUpdate === "notice"), "no notice to a client that did not ask for them");
    assert.doesNotMatch(chunkText(t.updates), /agent files/, "nor text in its conversation");
  }));
