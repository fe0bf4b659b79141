// Scenario 1: initialize — protocol version negotiation and advertised capabilities.

import { test } from "node:test";
import assert from "node:assert/strict";
import { withFixture, TEST_TIMEOUT_MS } from "../harness.mjs";

const SCRIPT = `
[[rule]]
  [[rule.reply]]
  text = "ok"
`;

test("initialize: protocolVersion 1, capabilities and agentInfo", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT, { init: false });
    const r = await a.initialize({ protocolVersion: 1 });
    assert.equal(r.protocolVersion, 1, `protocolVersion: ${JSON.stringify(r)}`);
    const caps = r.agentCapabilities;
    assert.ok(caps, `agentCapabilities missing: ${JSON.stringify(r)}`);
    assert.equal(caps.loadSession, true, `agentCapabilities.loadSession: ${JSON.stringify(caps)}`);
    assert.equal(caps.promptCapabilities?.embeddedContext, true, `promptCapabilities.embeddedContext: ${JSON.stringify(caps)}`);
    const sc = caps.sessionCapabilities;
    for (const k of ["list", "resume", "close"]) {
      assert.ok(sc && sc[k] !== null && typeof sc[k] === "object" && !Array.isArray(sc[k]),
        `sessionCapabilities.${k} must be an object marker ({}), got ${JSON.stringify(sc)}`);
    }
    assert.equal(r.agentInfo?.name, "pixir", `agentInfo: ${JSON.stringify(r.agentInfo)}`);
    assert.equal(typeof r.agentInfo?.version, "string", `agentInfo.version: ${JSON.stringify(r.agentInfo)}`);
  }));

test("initialize: client asks for protocol 99, agent answers its latest (1)", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT, { init: false });
    const r = await a.initialize({ protocolVersion: 99 });
    assert.equal(r.protocolVersion, 1, `protocolVersion: ${JSON.stringify(r)}`);
  }));

test("unknown methods get JSON-RPC -32601 and the agent keeps serving", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { error, result } = await a.requestError("session/no_such_method", {});
    assert.ok(error, `unknown method succeeded: ${JSON.stringify(result)}`);
    assert.equal(error.code, -32601, `unknown method error: ${JSON.stringify({ code: error.code, message: error.message })}`);
    const { sessionId } = await a.newSession();
    assert.equal(typeof sessionId, "string", "agent stopped serving after an unknown method");
  }));
