// Subagents as native ACP child sessions (issue 16), for a client that
// advertises clientCapabilities.subagents and plan: the official client
// with the SDK's unstable types, every agent message judged by
// schema.unstable.json. Each child is announced with subagent_update on its
// parent's session before any of its own updates, which come under its own
// session id; its state goes running → idle with a stop reason; its
// permission request names its session and the answer reaches it; a
// session/cancel on one child leaves its sibling running; a load replays the
// children with their final state, and one left running by a crash comes
// back unknown. Plans: two workflows in one turn are two plans.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { withFixture, toolCalls, chunkText, acpUnstable, TEST_TIMEOUT_MS, fanOutScript } from "../harness.mjs";

const NATIVE_CAPS = {
  fs: { readTextFile: false, writeTextFile: false },
  terminal: false,
  subagents: {},
  plan: {},
};

/** Starts an agent whose client is the unstable SDK advertising subagents and plan. */
async function startNative(f, script, opts = {}) {
  const a = await f.start(script, { init: false, unstable: true, ...opts });
  await a.initialize({ clientCapabilities: NATIVE_CAPS });
  return a;
}

/** The subagent_update updates of a session on the raw wire: [{seq, update}]. */
function subagentUpdates(a, sessionId) {
  return a.wireUpdates(sessionId).filter((u) => u.update.sessionUpdate === "subagent_update");
}

/** The child's state as the client folds the patches: the last concrete state. */
function lastState(a, parentId, childId) {
  const states = subagentUpdates(a, parentId)
    .map((u) => u.update)
    .filter((u) => u.sessionId === childId && u.state);
  return states.at(-1)?.state;
}

const FAN_OUT = fanOutScript(["child one", "child two"], { opening: "Spawning two children.", done: "Both are done." });

test("native children: announced before their traffic, own updates under their session id, running then idle", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await startNative(f, FAN_OUT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const t = await a.turn(sessionId, "fan out");
    assert.equal(t.response.stopReason, "end_turn");

    // No synthetic child tool calls for a client that shows children natively.
    assert.deepEqual(toolCalls(t.updates).filter((c) => c.toolCallId.startsWith("subagent-")), []);

    const announces = new Map(); // child session id → first subagent_update
    for (const { seq, update } of subagentUpdates(a, sessionId)) if (!announces.has(update.sessionId)) announces.set(update.sessionId, { seq, update });
    assert.equal(announces.size, 2, `two children announced: ${JSON.stringify([...announces.values()])}`);

    const spawns = toolCalls(t.updates).filter((c) => c.title.startsWith("Spawn"));
    for (const [childId, { seq, update }] of announces) {
      assert.notEqual(childId, sessionId);
      assert.match(update.title, /^default: child (one|two)$/);
      assert.match(update.description, /^child (one|two)$/);
      assert.equal(update.cwd, f.sandbox.workspace);
      assert.deepEqual(update.capabilities, { cancel: {} });
      // Announced before any of its own traffic.
      const own = a.wireUpdates(childId);
      assert.ok(own.length > 0, `child ${childId} has updates of its own`);
      assert.ok(own.every((u) => u.seq > seq), `the announce of ${childId} comes before its traffic`);
      assert.match(chunkText(own.map((u) => u.update)), /finished child (one|two)/);
      assert.equal(chunkText(own.map((u) => u.update), "user_message_chunk"), update.description, "the child's prompt in its own transcript");

      const states = subagentUpdates(a, sessionId)
        .map((u) => u.update)
        .filter((u) => u.sessionId === childId && u.state)
        .map((u) => u.state.state);
      assert.deepEqual(states, ["running", "idle"], `${childId}: running then idle`);
      const idle = lastState(a, sessionId, childId);
      assert.equal(idle.stopReason, "end_turn");
      // Usage: on its idle state, and its context as its own usage_update.
      assert.ok(idle.usage.totalTokens > 0 && idle.usage.totalTokens === idle.usage.inputTokens + idle.usage.outputTokens, JSON.stringify(idle));
      assert.ok(own.some((u) => u.update.sessionUpdate === "usage_update"), "the child's usage_update under its own session id");

      // The spawning call links to its child.
      const link = t.updates.find((u) => u.sessionUpdate === "tool_call_update" && u._meta?.pixir?.subagentSessionId === childId);
      assert.ok(link && spawns.some((s) => s.toolCallId === link.toolCallId), `a spawn_agent call links to ${childId}`);
    }
  }));

const ASKING_CHILD = `
[[rule]]
match = "^delegate the note$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "write the note", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 60000 }
  [[rule.reply]]
  text = "Delegated."
[[rule]]
match = "^write the note"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "note.txt", content = "from the child\\n" }
  [[rule.reply]]
  text = "wrote it"
`;

test("native children: a child's permission request names its session, and the answer reaches it", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await startNative(f, ASKING_CHILD);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    await a.request(acpUnstable.methods.agent.session.setMode, { sessionId, modeId: "ask" });
    const t = await a.turn(sessionId, "delegate the note");
    assert.equal(t.response.stopReason, "end_turn");

    const childId = subagentUpdates(a, sessionId)[0]?.update.sessionId;
    assert.ok(childId, "the child was announced");
    // Ask mode asks for the spawn (the parent's own call), then for the child's write.
    assert.equal(a.permissionRequests.length, 2, "two permission requests");
    assert.equal(a.permissionRequests[0].params.sessionId, sessionId, "the spawn is asked on the parent's session");
    const req = a.permissionRequests[1];
    assert.equal(req.params.sessionId, childId, "the child's request names the child's session");
    const childCall = toolCalls(a.updates(childId)).find((c) => c.toolCallId === req.params.toolCall.toolCallId);
    assert.ok(childCall, "the request is about the child's own tool call");
    assert.ok(req.params.toolCall.content?.some((c) => c.type === "diff"), "the request shows the diff");

    // The answer (allow once) reached the child: it wrote the file.
    assert.ok(existsSync(join(f.sandbox.workspace, "note.txt")), "the child wrote note.txt after the user allowed it");
    const states = subagentUpdates(a, sessionId)
      .filter((u) => u.update.state)
      .map((u) => u.update.state.state);
    assert.deepEqual(states, ["running", "requires_action", "running", "idle"]);
    // requires_action was shown before the request.
    const ra = subagentUpdates(a, sessionId).find((u) => u.update.state?.state === "requires_action");
    assert.ok(ra.seq < req.seq, "requires_action comes before the permission request");
  }));

const TWO_HANGING = `
[[rule]]
match = "^start two$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "hang alpha", workspace_mode = "shared" }
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "hang beta", workspace_mode = "shared" }
  [[rule.reply]]
  text = "Both started."
[[rule]]
match = "^hang"
  [[rule.reply]]
  hang = true
[[rule]]
match = 'still there|ended while'
  [[rule.reply]]
  text = "yes"
`;

test("native children: session/cancel on one child cancels it only; its sibling goes on running", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await startNative(f, TWO_HANGING);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    await a.turn(sessionId, "start two");
    const children = [...new Set(subagentUpdates(a, sessionId).map((u) => u.update.sessionId))];
    assert.equal(children.length, 2);
    for (const c of children) await a.waitFor(() => lastState(a, sessionId, c)?.state === "running", `${c} running`);
    const byTitle = (re) => children.find((c) => subagentUpdates(a, sessionId).some((u) => u.update.sessionId === c && re.test(u.update.title ?? "")));
    const alpha = byTitle(/hang alpha/);
    const beta = byTitle(/hang beta/);

    await a.cancel(alpha);
    await a.waitFor(() => lastState(a, sessionId, alpha)?.state === "idle", "alpha idle after its cancel");
    assert.equal(lastState(a, sessionId, alpha).stopReason, "cancelled");
    assert.equal(lastState(a, sessionId, beta).state, "running", "beta goes on running");

    // The parent's session was not cancelled: it answers another prompt.
    const t = await a.turn(sessionId, "still there?");
    assert.equal(chunkText(t.updates), "yes");
    assert.equal(lastState(a, sessionId, beta).state, "running", "beta still running");
    await a.cancel(beta);
    await a.waitFor(() => lastState(a, sessionId, beta)?.state === "idle", "beta idle after its cancel");
  }));

test("native children: session/load replays children with their final state; one left running by a crash is unknown", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const script = FAN_OUT + TWO_HANGING;
    const a = await startNative(f, script);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    await a.turn(sessionId, "fan out");
    await a.turn(sessionId, "start two");
    const running = [...new Set(subagentUpdates(a, sessionId).map((u) => u.update.sessionId))].filter(
      (c) => lastState(a, sessionId, c)?.state !== "idle",
    );
    assert.equal(running.length, 2, "two children still running");
    for (const c of running) await a.waitFor(() => lastState(a, sessionId, c)?.state === "running", `${c} running`);
    await a.kill();

    const b = await startNative(f, script);
    await b.request(acpUnstable.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    const replayed = new Map();
    for (const { update } of subagentUpdates(b, sessionId)) {
      const c = replayed.get(update.sessionId) ?? {};
      replayed.set(update.sessionId, { ...c, ...Object.fromEntries(Object.entries(update).filter(([, v]) => v !== undefined)) });
    }
    assert.equal(replayed.size, 4, `four children replayed: ${JSON.stringify([...replayed.values()])}`);
    const states = [...replayed.values()].map((c) => `${c.title}: ${c.state.state}${c.state.stopReason ? " " + c.state.stopReason : ""}`).sort();
    assert.deepEqual(states, [
      "default: child one: idle end_turn",
      "default: child two: idle end_turn",
      "default: hang alpha: unknown",
      "default: hang beta: unknown",
    ]);
  }));

const TWO_WORKFLOWS = `
[[rule]]
match = "^two workflows$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = ${JSON.stringify(JSON.stringify({ name: "first", steps: [{ id: "a", agent: "explorer", task: "[ready] first a" }] }))}
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = ${JSON.stringify(JSON.stringify({ name: "second", steps: [{ id: "b", agent: "explorer", task: "[ready] second b" }] }))}
  [[rule.reply]]
  text = "Both ran."
[[rule]]
match = '\\[ready\\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
    [rule.reply.tool_calls.arguments]
    status = "checkpoint_ready"
    summary = "done"
    produced = []
    verification = ["looked"]
    known_limitations = []
  [[rule.reply]]
  text = "Step done."
`;

test("plans with ids: two workflows in one turn keep two plans; their steps' children are native children", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await startNative(f, TWO_WORKFLOWS);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const t = await a.turn(sessionId, "two workflows");
    assert.equal(t.response.stopReason, "end_turn");
    assert.deepEqual(t.updates.filter((u) => u.sessionUpdate === "plan"), [], "no id-less plan for a client that keeps plans by id");
    const plans = new Map();
    for (const u of t.updates.filter((u) => u.sessionUpdate === "plan_update")) plans.set(u.plan.planId, u.plan);
    assert.equal(plans.size, 2, `two plans: ${JSON.stringify([...plans.keys()])}`);
    const runs = toolCalls(t.updates).filter((c) => c.title.toLowerCase().includes("workflow"));
    for (const run of runs) assert.ok(plans.has(`workflow-${run.toolCallId}`), `the plan of ${run.toolCallId}`);
    const contents = [...plans.values()].map((p) => p.entries.map((e) => e.content).join(" | ")).sort();
    assert.match(contents[0], /\ba\b/);
    assert.match(contents[1], /\bb\b/);

    const children = subagentUpdates(a, sessionId).filter((u) => u.update.title);
    assert.deepEqual(children.map((u) => u.update.title.split(" ")[0]).sort(), ["a", "b"], "each step's child announced, titled by its step");

    // Reopened in a fresh process: each run's plan again, by its id, as
    // the live session left it (rebuilt from the Log's workflow events).
    await a.close();
    const b = await startNative(f, TWO_WORKFLOWS);
    await b.request(acpUnstable.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    const replayed = new Map();
    for (const u of b.updates(sessionId).filter((u) => u.sessionUpdate === "plan_update")) replayed.set(u.plan.planId, u.plan);
    assert.deepEqual(Object.fromEntries(replayed), Object.fromEntries(plans), "the replayed plans are those the live session showed last");
  }));

// A step's child ended well but its step did not (partial,
// needs_orchestrator): the child session's own end says so, as the
// tool-call projection's failed call does — idle with stopReason error and
// the step's verdict — live and after a load; a ready step's child ends
// end_turn.
const STEP_VERDICTS = `
[[rule]]
match = "^judge the steps$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = ${JSON.stringify(
    JSON.stringify({
      name: "verdicts",
      steps: [
        { id: "good", agent: "explorer", task: "[verdict:checkpoint_ready] look" },
        { id: "half", agent: "explorer", task: "[verdict:partial] look" },
        { id: "ask", agent: "explorer", task: "[verdict:needs_orchestrator] look" },
      ],
    }),
  )}
  [[rule.reply]]
  text = "Judged."
${["checkpoint_ready", "partial", "needs_orchestrator"]
  .map(
    (status) => `
[[rule]]
match = '\\[verdict:${status}\\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
    [rule.reply.tool_calls.arguments]
    status = "${status}"
    summary = "the ${status} summary"
    verification = ["looked"]
  [[rule.reply]]
  text = "Step done."
`,
  )
  .join("")}
`;

test("native children: a step whose child ended well but whose checkpoint is not ready ends with an error stop reason saying so", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await startNative(f, STEP_VERDICTS);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const t = await a.turn(sessionId, "judge the steps");
    assert.equal(t.response.stopReason, "end_turn");
    const check = (client, when) => {
      const byStep = new Map();
      for (const { update } of subagentUpdates(client, sessionId)) {
        const step = update._meta?.pixir?.stepId;
        if (step) byStep.set(step, update.sessionId);
      }
      assert.deepEqual([...byStep.keys()].sort(), ["ask", "good", "half"], `${when}: each step's child`);
      const good = lastState(client, sessionId, byStep.get("good"));
      assert.equal(good.state, "idle");
      assert.equal(good.stopReason, "end_turn", `${when}: good: ${JSON.stringify(good)}`);
      for (const [step, status] of [["half", "partial"], ["ask", "needs_orchestrator"]]) {
        const s = lastState(client, sessionId, byStep.get(step));
        assert.equal(s.state, "idle", `${when}: ${step}: ${JSON.stringify(s)}`);
        assert.equal(s.stopReason, "error", `${when}: ${step} ended ${status}, not end_turn: ${JSON.stringify(s)}`);
        assert.match(s.error?.message ?? "", new RegExp(`Step ${step} ended ${status}: the ${status} summary`));
        assert.equal(s._meta?.pixir?.checkpointStatus, status);
        assert.equal(s._meta?.pixir?.status, "completed", "the child itself completed");
      }
    };
    check(a, "live");
    await a.close();
    const b = await startNative(f, STEP_VERDICTS);
    await b.request(acpUnstable.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    check(b, "replayed");
  }));

// An editor that closes a tab and opens it again loads the session on the
// same connection: the replay announces each child again, as a fresh
// process's does, with its title, cwd and cancel capability, and links
// the spawn_agent call to it; a client that dropped the tab's state would
// otherwise meet children it cannot name.
test("native children: a load on the same connection announces the children again", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await startNative(f, FAN_OUT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    await a.turn(sessionId, "fan out");
    const live = new Map();
    for (const { update } of subagentUpdates(a, sessionId)) if (!live.has(update.sessionId)) live.set(update.sessionId, update);
    assert.equal(live.size, 2);
    await a.request(acpUnstable.methods.agent.session.close, { sessionId });

    const before = a.wire.length;
    await a.request(acpUnstable.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    const replay = a.wire.slice(before).filter((w) => w.dir === "agent" && w.msg.method === "session/update" && w.msg.params.sessionId === sessionId).map((w) => w.msg.params.update);
    for (const [childId, first] of live) {
      const again = replay.find((u) => u.sessionUpdate === "subagent_update" && u.sessionId === childId);
      assert.ok(again, `${childId} replayed`);
      for (const field of ["title", "description", "cwd", "capabilities"]) assert.deepEqual(again[field], first[field], `${childId}: ${field} in the replay's first update`);
      assert.ok(
        replay.some((u) => u.sessionUpdate === "tool_call_update" && u._meta?.pixir?.subagentSessionId === childId),
        `the replayed spawn_agent call links to ${childId}`,
      );
    }
  }));

// A client that treats a child's session as one of its own (load, resume,
// fork, delete) is told whose child it is and what to do instead; a load
// said there was no Log of it. Closing it (its tab) stops it, as
// session/cancel on it does: a "not found" answer, which the SDK takes
// for closed, left it running.
test("native children: session requests naming a child say whose child it is; closing it stops it", { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withFixture(async (f) => {
    const a = await startNative(f, TWO_HANGING);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    await a.turn(sessionId, "start two");
    const children = [...new Set(subagentUpdates(a, sessionId).map((u) => u.update.sessionId))];
    assert.equal(children.length, 2);
    for (const c of children) await a.waitFor(() => lastState(a, sessionId, c)?.state === "running", `${c} running`);
    const [childId, sibling] = children;
    const m = acpUnstable.methods.agent.session;
    const cwd = f.sandbox.workspace;
    for (const [method, params, code] of [
      [m.load, { sessionId: childId, cwd, mcpServers: [] }, -32002],
      [m.resume, { sessionId: childId, cwd }, -32002],
      [m.fork, { sessionId: childId, cwd, mcpServers: [] }, -32002],
      [m.delete, { sessionId: childId }, -32600],
    ]) {
      const { error } = await a.requestError(method, params);
      assert.ok(error, `${method} of a child fails`);
      assert.equal(error.code, code, method);
      assert.match(error.message, new RegExp(`${childId} is the session of a Subagent of session ${sessionId}`), `${method}: ${error.message}`);
    }
    assert.equal(lastState(a, sessionId, childId).state, "running", "none of them touched the child");

    await a.request(m.close, { sessionId: childId });
    // Answered once the child has stopped: its end came before the answer,
    // and nothing of it comes after (it came after, under the closed id).
    const closed = a.responseSeq(m.close);
    const idle = subagentUpdates(a, sessionId).find((u) => u.update.sessionId === childId && u.update.state?.state === "idle");
    assert.ok(idle && idle.seq < closed, `the closed child's end comes before the answer to session/close: ${JSON.stringify(idle)}, answer at ${closed}`);
    assert.equal(lastState(a, sessionId, childId).stopReason, "cancelled");
    assert.equal(lastState(a, sessionId, sibling).state, "running", "its sibling goes on");
    assert.equal((await a.turn(sessionId, "still there?")).response.stopReason, "end_turn", "its parent goes on");
    const after = [...a.wireUpdates(childId), ...subagentUpdates(a, sessionId).filter((u) => u.update.sessionId === childId)].filter((u) => u.seq > closed);
    assert.deepEqual(after, [], "nothing of the closed child comes after the answer to its close");
    await a.cancel(sibling);
    await a.waitFor(() => lastState(a, sessionId, sibling)?.state === "idle", "sibling idle after its cancel");
  }));
