// Permission matrix: every built-in tool in every mode, answered by the
// official client. Reads never ask; mutations run in auto, ask first in ask
// (tool_call → session/request_permission → tool_call_update), and are
// refused without asking in read_only — except bash, which runs there in a
// read-only sandbox (Linux with Landlock): it completes, its write is denied
// by the kernel, and the workspace is unchanged. Every message is
// schema-checked by the harness.

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { withFixture, selectKind, toolCalls, finalToolState, toolContentText, TEST_TIMEOUT_MS } from "../harness.mjs";

// One call per tool, with arguments that succeed when allowed.
const TOOLS = {
  read: { posture: "read", kind: "read", args: `{ path = "seed.txt" }` },
  write: { posture: "mutation", kind: "edit", args: `{ path = "written.txt", content = "new\\n" }` },
  edit: { posture: "mutation", kind: "edit", args: `{ path = "seed.txt", old_text = "alpha", new_text = "beta" }` },
  bash: { posture: "mutation", kind: "execute", args: `{ command = "echo ran > ran.txt" }` },
  grep: { posture: "read", kind: "search", args: `{ pattern = "alpha" }` },
  glob: { posture: "read", kind: "search", args: `{ pattern = "*.txt" }` },
  update_plan: { posture: "read", kind: "think", args: `{ entries = [ { content = "check the matrix", status = "in_progress" } ] }` },
};

const SCRIPT = Object.entries(TOOLS).map(([name, t]) => `
[[rule]]
match = "^use ${name}$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "${name}"
  arguments = ${t.args}
  [[rule.reply]]
  text = "done with ${name}"
`).join("");

// What each tool leaves behind when it ran, to prove a refusal changed nothing.
const effects = {
  write: (ws) => existsSync(join(ws, "written.txt")),
  edit: (ws) => readFileSync(join(ws, "seed.txt"), "utf8").includes("beta"),
  bash: (ws) => existsSync(join(ws, "ran.txt")),
};

const MODES = ["auto", "ask", "read_only"];

for (const mode of MODES) {
  test(`permission matrix: every tool in ${mode} mode`, { timeout: TEST_TIMEOUT_MS * 2 }, () =>
    withFixture(async (f) => {
      const ws = f.sandbox.workspace;
      const a = await f.start(SCRIPT);
      a.permission = selectKind("allow_once");
      const { sessionId } = await a.newSession(ws);
      await a.request("session/set_mode", { sessionId, modeId: mode });

      for (const [name, tool] of Object.entries(TOOLS)) {
        // A fresh workspace state for each call.
        writeFileSync(join(ws, "seed.txt"), "alpha\n");
        for (const leftover of ["written.txt", "ran.txt"]) rmSync(join(ws, leftover), { force: true });
        const asksBefore = a.permissionRequests.length;
        const t = await a.turn(sessionId, `use ${name}`);
        const label = `${name} in ${mode}`;
        assert.equal(t.response.stopReason, "end_turn", `${label}: ${JSON.stringify(t.response)}`);
        const calls = toolCalls(t.updates);
        assert.equal(calls.length, 1, `${label}: one tool_call expected, got ${JSON.stringify(t.updates)}`);
        const call = calls[0];
        assert.equal(call.status, "pending", `${label}: tool_call status`);
        assert.equal(call.kind, tool.kind, `${label}: tool kind`);
        assert.ok(call.title && call.title.length > 0, `${label}: a readable title`);
        const final = finalToolState(t.updates, call.toolCallId);

        const mutation = tool.posture === "mutation";
        const asks = a.permissionRequests.slice(asksBefore);
        if (mutation && mode === "ask") {
          assert.equal(asks.length, 1, `${label}: one permission request expected`);
          const ask = asks[0];
          assert.equal(ask.params.toolCall.toolCallId, call.toolCallId, `${label}: the request names the call`);
          const seqs = t.wireUpdates.filter((w) => w.update.toolCallId === call.toolCallId);
          const announced = seqs.find((w) => w.update.sessionUpdate === "tool_call");
          const firstUpdate = seqs.find((w) => w.update.sessionUpdate === "tool_call_update");
          assert.ok(announced.seq < ask.seq, `${label}: tool_call (#${announced.seq}) must precede request_permission (#${ask.seq})`);
          assert.ok(ask.seq < firstUpdate.seq, `${label}: request_permission (#${ask.seq}) must precede tool_call_update (#${firstUpdate.seq})`);
        } else {
          assert.equal(asks.length, 0, `${label}: no permission request expected, got ${JSON.stringify(asks.map((x) => x.params))}`);
        }

        if (name === "bash" && mode === "read_only" && final.status === "completed") {
          // Sandboxed: the command ran, its write was refused by the kernel.
          assert.match(toolContentText(final.content), /Permission denied/, `${label}: the sandbox refused the write`);
          assert.equal(effects[name](ws), false, `${label}: a sandboxed command changed the workspace`);
        } else if (mutation && mode === "read_only") {
          assert.equal(final.status, "failed", `${label}: ${JSON.stringify(final)}`);
          assert.match(toolContentText(final.content), /permission_denied/, `${label}: the refusal says why`);
          assert.equal(effects[name](ws), false, `${label}: a refused call changed the workspace`);
        } else {
          assert.equal(final.status, "completed", `${label}: ${JSON.stringify(final)}`);
          if (effects[name]) assert.equal(effects[name](ws), true, `${label}: an allowed call had no effect`);
        }
        if (name === "update_plan") {
          const plan = t.updates.find((u) => u.sessionUpdate === "plan");
          assert.ok(plan, `${label}: update_plan must send a plan update`);
          assert.deepEqual(plan.entries.map((e) => [e.content, e.status]), [["check the matrix", "in_progress"]]);
        }
        if (name === "write" && final.status === "completed") {
          assert.ok(final.content.some((c) => c.type === "diff" && c.path === join(ws, "written.txt")), `${label}: a diff for the write`);
        }
      }
    }));
}
