// Scenario 2: session/new — session id, modes and config options.

import { test } from "node:test";
import assert from "node:assert/strict";
import { withFixture, TEST_TIMEOUT_MS } from "../harness.mjs";

const SCRIPT = `
[[rule]]
  [[rule.reply]]
  text = "ok"
`;

const selectValues = (opt) =>
  (opt.options ?? []).flatMap((o) => (Array.isArray(o.options) ? o.options.map((x) => x.value) : [o.value]));

test("session/new: sessionId, modes (auto/ask/read_only) and config options mode+model", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const r = await a.newSession(f.sandbox.workspace);
    assert.equal(typeof r.sessionId, "string", `sessionId: ${JSON.stringify(r)}`);
    assert.ok(r.sessionId.length > 0, "sessionId is empty");

    assert.ok(r.modes, `modes missing: ${JSON.stringify(r)}`);
    assert.equal(r.modes.currentModeId, "auto", `modes.currentModeId: ${JSON.stringify(r.modes)}`);
    const modeIds = r.modes.availableModes.map((m) => m.id);
    assert.deepEqual([...modeIds].sort(), ["ask", "auto", "read_only"], `availableModes ids: ${JSON.stringify(modeIds)}`);

    const opts = r.configOptions ?? [];
    const byId = Object.fromEntries(opts.map((o) => [o.id, o]));
    for (const id of ["mode", "model"]) {
      assert.ok(byId[id], `configOptions has no ${id}: ${JSON.stringify(opts)}`);
      assert.equal(byId[id].type, "select", `configOptions.${id}.type: ${JSON.stringify(byId[id])}`);
      assert.ok(selectValues(byId[id]).includes(byId[id].currentValue),
        `configOptions.${id}.currentValue ${JSON.stringify(byId[id].currentValue)} is not one of its options ${JSON.stringify(selectValues(byId[id]))}`);
    }
    assert.equal(byId.mode.currentValue, "auto", `mode option currentValue: ${JSON.stringify(byId.mode)}`);
    assert.deepEqual([...selectValues(byId.mode)].sort(), ["ask", "auto", "read_only"], `mode option values: ${JSON.stringify(byId.mode)}`);

    // Two sessions get distinct ids.
    const r2 = await a.newSession(f.sandbox.workspace);
    assert.notEqual(r2.sessionId, r.sessionId, "second session/new returned the same sessionId");
  }));
