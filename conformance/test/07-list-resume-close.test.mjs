// Scenario 7: session/list, session/resume (no replay) and session/close.

import { test } from "node:test";
import assert from "node:assert/strict";
import { acp, withFixture, isConversationUpdate, chunkText, sleep, TEST_TIMEOUT_MS } from "../harness.mjs";

const SCRIPT = `
[[rule]]
match = "(?i)hello"
  [[rule.reply]]
  text = "Hello!"

[[rule]]
  [[rule.reply]]
  text = "fallback"
`;

const P1 = "hello alpha session";
const P2 = "hello bravo session";

test("session/list, session/resume without replay, session/close", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const ws = f.sandbox.workspace;
    const a = await f.start(SCRIPT);
    const s1 = (await a.newSession(ws)).sessionId;
    assert.equal((await a.turn(s1, P1)).response.stopReason, "end_turn");
    const s2 = (await a.newSession(ws)).sessionId;
    assert.equal((await a.turn(s2, P2)).response.stopReason, "end_turn");

    const checkList = (res, where) => {
      const byId = Object.fromEntries(res.sessions.map((s) => [s.sessionId, s]));
      for (const [sid, word] of [[s1, "alpha"], [s2, "bravo"]]) {
        const s = byId[sid];
        assert.ok(s, `${where}: session/list lacks ${sid}: ${JSON.stringify(res)}`);
        assert.equal(s.cwd, ws, `${where}: cwd of ${sid}: ${JSON.stringify(s)}`);
        assert.equal(typeof s.title, "string", `${where}: title of ${sid}: ${JSON.stringify(s)}`);
        assert.match(s.title, new RegExp(word, "i"), `${where}: title of ${sid} should derive from its first prompt: ${JSON.stringify(s)}`);
        assert.equal(typeof s.updatedAt, "string", `${where}: updatedAt of ${sid}: ${JSON.stringify(s)}`);
        assert.ok(!Number.isNaN(Date.parse(s.updatedAt)), `${where}: updatedAt is not an ISO 8601 date: ${JSON.stringify(s)}`);
      }
    };
    checkList(await a.request(acp.methods.agent.session.list, { cwd: ws }), "same process");
    await a.close();

    // Fresh process, same PIXIR_HOME.
    const b = await f.start(SCRIPT);
    checkList(await b.request(acp.methods.agent.session.list, { cwd: ws }), "fresh process");

    // Resume: answers without replaying the conversation.
    const resumed = await b.request(acp.methods.agent.session.resume, { sessionId: s1, cwd: ws, mcpServers: [] });
    assert.ok(resumed && typeof resumed === "object", `session/resume result: ${JSON.stringify(resumed)}`);
    await sleep(200);
    const replayed = b.wireUpdates(s1).filter((w) => isConversationUpdate(w.update));
    assert.deepEqual(replayed.map((w) => w.update), [], "session/resume replayed conversation updates");
    const t = await b.turn(s1, "hello after resume");
    assert.equal(t.response.stopReason, "end_turn", `prompt after resume: ${JSON.stringify(t.response)}`);
    assert.equal(chunkText(t.updates), "Hello!");

    // Close: {} and later prompts to it are errors, not crashes.
    const closed = await b.request(acp.methods.agent.session.close, { sessionId: s1 });
    assert.deepEqual(closed, {}, `session/close result: ${JSON.stringify(closed)}`);
    const { error, result } = await b.requestError(acp.methods.agent.session.prompt, { sessionId: s1, prompt: [{ type: "text", text: "hello?" }] });
    assert.ok(error, `prompt to a closed session should be an error response, got result ${JSON.stringify(result)}`);
    assert.equal(b.exit, null, `agent exited after prompting a closed session: ${JSON.stringify(b.exit)}`);
    // The process still serves other sessions.
    const other = await b.request(acp.methods.agent.session.resume, { sessionId: s2, cwd: ws, mcpServers: [] });
    assert.ok(other, "session/resume of the other session after close");
    assert.equal((await b.turn(s2, "hello bravo again")).response.stopReason, "end_turn", "prompt to the other session after close");
  }));
