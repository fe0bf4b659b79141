// Workflows over ACP: one run_workflow call with four steps — a parallel
// pair of read-only steps, a serialized pair of isolated writers whose
// write sets overlap, and a timeout (the second writer hangs past its
// timeout_ms). The workflow is shown as a `plan` whose entries are its
// steps, each step's child is its own tool call nested under the
// run_workflow call, and the partial outcome is a failed call (never
// completed) with a readable table and the full result envelope. Every
// agent message is checked against the ACP schema by the harness.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { acp, withFixture, toolCalls, toolCallUpdates, finalToolState, toolContentText, TEST_TIMEOUT_MS } from "../harness.mjs";

const STEPS = [
  { id: "survey", agent: "explorer", task: "[ready] Survey the source tree." },
  { id: "notes", agent: "explorer", task: "[ready] Summarize the notes." },
  {
    id: "write-all",
    task: "[write] Write src/a.txt.",
    permission_mode: "writer",
    write_set: ["src/**"],
    workspace_mode: "isolated",
  },
  {
    id: "write-one",
    task: "[hang] Rewrite src/a.txt.",
    permission_mode: "writer",
    write_set: ["src/a.txt"],
    workspace_mode: "isolated",
    timeout_ms: 400,
  },
];
const STEP_IDS = STEPS.map((s) => s.id);

// The parent's rule is anchored on a phrase no child prompt contains; the
// children are keyed on the bracketed tag their task starts with (Pixir's
// appended instructions mention "failed", "partial", "checkpoint"...).
// The ready children take a moment, so the parallel pair visibly overlaps.
const SCRIPT = `
[[rule]]
name = "parent"
match = "^orchestrate the pipeline$"
  [[rule.reply]]
  text = "Running the pipeline as a workflow."
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = ${JSON.stringify(JSON.stringify({ name: "pipeline", steps: STEPS }))}
  [[rule.reply]]
  text = "The workflow ended {{field \\"output.status\\" .ToolResult}}."

[[rule]]
name = "hanging step"
match = '\\[hang\\]'
  [[rule.reply]]
  hang = true

[[rule]]
name = "writer step"
match = '\\[write\\]'
  [[rule.reply]]
  delay_ms = 300
  text = "Writing src/a.txt in my snapshot."
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "src/a.txt", content = "written by the first writer\\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
    [rule.reply.tool_calls.arguments]
    status = "checkpoint_ready"
    summary = "wrote src/a.txt in my snapshot"
    produced = ["src/a.txt"]
    verification = ["the write tool succeeded"]
    known_limitations = []
  [[rule.reply]]
  text = "Step done."

[[rule]]
name = "ready step"
match = '\\[ready\\]'
  [[rule.reply]]
  delay_ms = 300
  text = "Reporting my checkpoint."
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
    [rule.reply.tool_calls.arguments]
    status = "checkpoint_ready"
    summary = "looked and found what was asked"
    produced = ["a summary"]
    verification = ["read the files"]
    known_limitations = []
  [[rule.reply]]
  text = "Step done."
`;

const TERMINAL = new Set(["completed", "failed"]);

test("workflow: parallel pair, serialized writers and a timeout, shown as a plan, nested tool calls and a failed partial outcome", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(SCRIPT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const t = await a.turn(sessionId, "orchestrate the pipeline");
    assert.equal(t.response.stopReason, "end_turn");
    assert.deepEqual(t.late, [], "no conversation update after the prompt answered");
    const updates = t.updates;

    // --- the run_workflow call
    const calls = toolCalls(updates);
    const wfCalls = calls.filter((c) => c.rawInput?.steps !== undefined);
    assert.equal(wfCalls.length, 1, `one run_workflow call: ${JSON.stringify(calls)}`);
    const wf = wfCalls[0];
    assert.equal(wf.status, "pending");
    assert.equal(wf.kind, "think");
    assert.equal(wf.title, "Workflow pipeline (4 steps)");
    assert.deepEqual(wf.rawInput.steps.map((s) => s.id), STEP_IDS);

    // --- nested tool calls: one per step, linked to the run_workflow call
    const children = calls.filter((c) => c._meta?.pixir?.parentToolCallId !== undefined);
    assert.equal(children.length, 4, `four child tool calls: ${JSON.stringify(calls.map((c) => [c.toolCallId, c.title]))}`);
    const childOf = new Map();
    for (const child of children) {
      const meta = child._meta.pixir;
      assert.equal(meta.parentToolCallId, wf.toolCallId, `${child.title}: linked to the run_workflow call`);
      const step = STEPS.find((s) => s.id === meta.stepId);
      assert.ok(step, `child ${child.toolCallId} names a step of the workflow (stepId ${meta.stepId})`);
      assert.ok(!childOf.has(step.id), `one child per step (${step.id} twice)`);
      childOf.set(step.id, child);
      assert.equal(child.kind, "think");
      assert.equal(child.status, "pending");
      assert.equal(child.title, `${step.id} (${step.agent ?? "default"}): ${step.task}`);
    }
    assert.deepEqual([...childOf.keys()].sort(), [...STEP_IDS].sort());

    // Each child: in_progress, then one terminal update.
    const idx = (pred) => updates.findIndex(pred);
    const startedAt = (id) =>
      idx((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === childOf.get(id).toolCallId && u.status === "in_progress");
    const endedAt = (id) =>
      idx((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === childOf.get(id).toolCallId && TERMINAL.has(u.status));
    for (const id of STEP_IDS) {
      const cid = childOf.get(id).toolCallId;
      const s = startedAt(id);
      const e = endedAt(id);
      assert.ok(s >= 0, `${id}: its child went in_progress`);
      assert.ok(e > s, `${id}: its child ended after it started`);
      const terminals = toolCallUpdates(updates, cid).filter((u) => TERMINAL.has(u.status));
      assert.equal(terminals.length, 1, `${id}: exactly one terminal update: ${JSON.stringify(terminals)}`);
    }
    const expectChild = { survey: "completed", notes: "completed", "write-all": "completed", "write-one": "failed" };
    for (const [id, status] of Object.entries(expectChild)) {
      const fin = finalToolState(updates, childOf.get(id).toolCallId);
      assert.equal(fin.status, status, `${id}: final child status: ${JSON.stringify(fin)}`);
    }
    assert.match(toolContentText(finalToolState(updates, childOf.get("write-one").toolCallId).content), /timed_out/);

    // The parallel pair overlaps: both started before either ended.
    assert.ok(
      Math.max(startedAt("survey"), startedAt("notes")) < Math.min(endedAt("survey"), endedAt("notes")),
      "survey and notes ran at the same time",
    );
    // The serialized writers: the second starts only after the first ended.
    assert.ok(
      endedAt("write-all") < startedAt("write-one"),
      `write-one (in_progress at ${startedAt("write-one")}) started only after write-all ended (at ${endedAt("write-all")})`,
    );
    assert.ok(
      idx((u) => u.sessionUpdate === "tool_call" && u.toolCallId === childOf.get("write-one").toolCallId) > endedAt("write-all"),
      "write-one's child was not even queued before write-all ended",
    );

    // Children live inside the run_workflow call: all their updates come
    // between its tool_call and its terminal update.
    const wfStart = idx((u) => u.sessionUpdate === "tool_call" && u.toolCallId === wf.toolCallId);
    const wfEnd = idx((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === wf.toolCallId && TERMINAL.has(u.status));
    assert.ok(wfEnd > wfStart, "run_workflow ended");
    for (const child of children) {
      const positions = updates.flatMap((u, i) => ((u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === child.toolCallId ? [i] : []));
      assert.ok(positions[0] > wfStart && positions.at(-1) < wfEnd, `${child.title}: all its updates inside the run_workflow call`);
    }

    // --- the plan: entries are the four steps, kept current, final states last
    const plans = updates.filter((u) => u.sessionUpdate === "plan");
    assert.ok(plans.length >= 2, `the plan was shown and kept current (${plans.length} plan updates)`);
    for (const p of plans) {
      assert.equal(p.entries.length, 4, `every plan has the four steps: ${JSON.stringify(p.entries)}`);
      p.entries.forEach((e, i) => assert.ok(e.content.startsWith(`${STEP_IDS[i]}: `), `plan entry ${i} is step ${STEP_IDS[i]}: ${e.content}`));
    }
    assert.ok(
      plans.some((p) => p.entries.some((e) => e.status === "in_progress")),
      `some plan shows a running step: ${JSON.stringify(plans.map((p) => p.entries.map((e) => e.status)))}`,
    );
    assert.ok(
      plans.some((p) => p.entries[3].status === "pending" && p.entries[2].status === "in_progress"),
      "a plan shows write-one pending while write-all runs",
    );
    const lastPlanAt = updates.lastIndexOf(plans.at(-1));
    assert.ok(lastPlanAt < wfEnd, "the final plan is shown before the run_workflow call ends");
    const last = plans.at(-1).entries;
    assert.deepEqual(last.map((e) => e.status), ["completed", "completed", "completed", "completed"], `final plan: ${JSON.stringify(last)}`);
    for (const i of [0, 1, 2]) assert.match(last[i].content, /checkpoint_ready/, `final plan entry ${i}`);
    assert.match(last[3].content, /failed/);
    assert.match(last[3].content, /timed_out/);

    // --- the final presentation of run_workflow: failed (never completed)
    const wfUpdates = toolCallUpdates(updates, wf.toolCallId);
    assert.ok(!wfUpdates.some((u) => u.status === "completed"), `run_workflow is never shown completed: ${JSON.stringify(wfUpdates.map((u) => u.status))}`);
    const fin = finalToolState(updates, wf.toolCallId);
    assert.equal(fin.status, "failed");
    const text = toolContentText(fin.content);
    assert.match(text, /PARTIAL/);
    for (const id of STEP_IDS) assert.ok(text.includes(`| ${id} |`), `the outcome table has a row for ${id}:\n${text}`);

    const raw = fin.rawOutput;
    assert.equal(raw.ok, false, `rawOutput.ok: ${JSON.stringify(raw).slice(0, 500)}`);
    assert.equal(raw.error, undefined, "a partial workflow is no tool error");
    const out = raw.output;
    assert.equal(out.status, "partial");
    assert.equal(out.mode, "run");
    assert.equal(out.name, "pipeline");
    assert.equal(out.output, text, "the shown table is the outcome's own rendering");
    assert.deepEqual(out.steps.map((s) => s.step_id), STEP_IDS);
    assert.deepEqual(out.timeout_steps, ["write-one"]);
    assert.deepEqual(out.usable_checkpoints, ["survey", "notes", "write-all"]);
    assert.deepEqual(out.failed_steps, ["write-one"]);
    assert.deepEqual(out.held_steps, []);
    const counts = { steps: 4, waves: 1, checkpoint_ready_steps: 3, partial_steps: 0, failed_steps: 1, held_steps: 0, needs_orchestrator_steps: 0 };
    for (const [k, v] of Object.entries(counts)) assert.equal(out.summary[k], v, `summary.${k}: ${JSON.stringify(out.summary)}`);
    const step = Object.fromEntries(out.steps.map((s) => [s.step_id, s]));
    assert.equal(step["write-one"].subagent_status, "timed_out");
    assert.equal(step["write-one"].checkpoint_status, "failed");
    for (const id of ["survey", "notes", "write-all"]) {
      assert.equal(step[id].subagent_status, "completed", `${id}: ${JSON.stringify(step[id])}`);
      assert.equal(step[id].checkpoint_status, "checkpoint_ready");
      assert.equal(step[id].checkpoint?.source, "report_checkpoint");
    }
    // A wave is a dependency level: no step depends on another, so all four
    // are wave 1, the overlapping writer too (that it waited for write-all
    // is checked above, by when each started and ended).
    for (const id of STEP_IDS) assert.equal(step[id].wave, 1, `${id}: waves: ${JSON.stringify(out.waves)}`);
    assert.deepEqual(out.waves, [STEP_IDS], "one wave, in declaration order");
    for (const id of STEP_IDS) {
      const agentId = step[id].agent_id;
      assert.ok(agentId, `${id} had a child`);
      assert.equal(childOf.get(id).toolCallId, `subagent-${agentId}`, `${id}: its tool call is its child's`);
    }
    assert.ok(out.merge_conflict_risk.some((m) => m.steps.includes("write-all") && m.steps.includes("write-one")), "the writers' merge risk is reported");

    // The isolated writer wrote its snapshot, and the run merged it into
    // the workspace once it was ready (merge on_ready); the writer that
    // timed out is not merged.
    assert.deepEqual(step["write-all"].changes?.added, ["src/a.txt"], `write-all changes: ${JSON.stringify(step["write-all"].changes)}`);
    assert.equal(step["write-all"].merge?.status, "merged", JSON.stringify(step["write-all"].merge));
    assert.equal(step["write-one"].merge?.status, "not_merged", JSON.stringify(step["write-one"].merge));
    assert.equal(existsSync(join(f.sandbox.workspace, "src/a.txt")), true, "merged into the workspace");

    // The parent model read the outcome.
    const textAfter = updates.slice(wfEnd).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
    assert.match(textAfter, /The workflow ended partial\./);

    // --- reopened: a session/load in a fresh process shows the plan the
    // run showed last (plans are not in the Log: it is rebuilt from the
    // workflow's events), where the live session showed it, before the
    // run_workflow call's end.
    await a.close();
    const b = await f.start(SCRIPT);
    await b.request(acp.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    const replay = b.updates(sessionId);
    const replayedPlans = replay.filter((u) => u.sessionUpdate === "plan");
    assert.equal(replayedPlans.length, 1, `one plan replayed: ${JSON.stringify(replayedPlans)}`);
    assert.deepEqual(replayedPlans[0].entries, last, "the replayed plan is the one the live session showed last");
    const rWfEnd = replay.findIndex((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === wf.toolCallId && TERMINAL.has(u.status));
    const rPlanAt = replay.indexOf(replayedPlans[0]);
    assert.ok(rPlanAt >= 0 && rPlanAt < rWfEnd, `the plan is replayed before the run_workflow call's end (${rPlanAt} < ${rWfEnd})`);
    const rChildEnds = children.map((c) => replay.findIndex((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === c.toolCallId && TERMINAL.has(u.status)));
    assert.ok(rChildEnds.every((i) => i >= 0 && i < rPlanAt), `after every step's end (${rChildEnds} < ${rPlanAt})`);
  }));

// A workflow cut off by a crash: nothing in the Log says how it ended, and
// a session/load shows its plan as the Log tells it (Rebuild): the step
// that was running detached (failed), the step after it held.
const CRASH_STEPS = [
  { id: "first", agent: "explorer", task: "[ready] Look first." },
  { id: "stuck", agent: "explorer", task: "[hang] Never end.", depends_on: ["first"] },
  { id: "later", agent: "explorer", task: "[ready] Look later.", depends_on: ["stuck"] },
];
const CRASH_SCRIPT =
  SCRIPT +
  `
[[rule]]
name = "crashing parent"
match = "^run and crash$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = ${JSON.stringify(JSON.stringify({ name: "cut", steps: CRASH_STEPS }))}

[[rule]]
name = "finishing parent"
match = "^run and finish$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = ${JSON.stringify(JSON.stringify({ name: "whole", steps: [{ id: "only", agent: "explorer", task: "[ready] Look once." }] }))}
  [[rule.reply]]
  text = "Finished."
`;

test("workflow cut off by a crash: session/load shows its plan as the Log tells it", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(CRASH_SCRIPT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const turn = a.prompt(sessionId, "run and crash").catch(() => undefined); // ends with the process
    const plan = () => a.updates(sessionId).filter((u) => u.sessionUpdate === "plan").at(-1)?.entries;
    await a.waitFor(() => plan()?.[1]?.status === "in_progress", "the stuck step running");
    await a.kill();
    await turn;

    const b = await f.start(CRASH_SCRIPT);
    await b.request(acp.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    const replayed = b.updates(sessionId).filter((u) => u.sessionUpdate === "plan");
    assert.equal(replayed.length, 1, `one plan replayed: ${JSON.stringify(replayed)}`);
    const entries = replayed[0].entries;
    assert.deepEqual(entries.map((e) => e.content.split(":")[0]), ["first", "stuck", "later"]);
    assert.match(entries[0].content, /checkpoint_ready/);
    assert.equal(entries[0].status, "completed");
    assert.match(entries[1].content, /failed \(detached\)/);
    assert.equal(entries[1].status, "completed");
    assert.match(entries[2].content, /held/);
    assert.equal(entries[2].status, "pending");

    // A later run that finished: a load ends showing its plan, as the
    // live session did, not the cut-off run's (shown where its call ended,
    // answered as interrupted), to a client without plan ids.
    const t = await b.turn(sessionId, "run and finish");
    assert.equal(t.response.stopReason, "end_turn", `the second run's turn: ${JSON.stringify(t.response)}`);
    const live = t.updates.filter((u) => u.sessionUpdate === "plan").at(-1)?.entries;
    assert.deepEqual(live?.map((e) => e.content.split(":")[0]), ["only"], `the live session showed the second run's plan last: ${JSON.stringify(live)}`);
    await b.kill();
    const c = await f.start(CRASH_SCRIPT);
    await c.request(acp.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
    const again = c.updates(sessionId).filter((u) => u.sessionUpdate === "plan");
    assert.equal(again.length, 2, `two plans replayed: ${JSON.stringify(again)}`);
    assert.deepEqual(again[0].entries.map((e) => e.content.split(":")[0]), ["first", "stuck", "later"]);
    assert.deepEqual(again[1].entries, live, "the load ends showing the plan the live session showed last");
  }));

// A workflow cancelled mid-run (session/cancel): every call the editor was
// shown ends — each step's child, the running one failed, and the
// run_workflow call — before the prompt answers cancelled.
const CANCEL_STEPS = [
  { id: "quick", agent: "explorer", task: "[ready] Look quickly." },
  { id: "stuck", agent: "explorer", task: "[hang] Never end." },
  { id: "after", agent: "explorer", task: "[ready] Look after.", depends_on: ["stuck"] },
];
const CANCEL_SCRIPT =
  SCRIPT +
  `
[[rule]]
name = "cancelled parent"
match = "^run until cancelled$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = ${JSON.stringify(JSON.stringify({ name: "cancelled", steps: CANCEL_STEPS }))}
`;

test("workflow cancelled mid-run: every call shown ends before the prompt answers", { timeout: TEST_TIMEOUT_MS }, () =>
  withFixture(async (f) => {
    const a = await f.start(CANCEL_SCRIPT);
    const { sessionId } = await a.newSession(f.sandbox.workspace);
    const turn = a.turn(sessionId, "run until cancelled");
    const plan = () => a.updates(sessionId).filter((u) => u.sessionUpdate === "plan").at(-1)?.entries;
    await a.waitFor(() => plan()?.[0]?.content.includes("checkpoint_ready") && plan()?.[1]?.status === "in_progress", "quick done and stuck running");
    await a.cancel(sessionId);
    const t = await turn;
    assert.equal(t.response.stopReason, "cancelled");
    assert.deepEqual(t.late, [], "no conversation update after the prompt answered");
    const calls = toolCalls(t.updates);
    assert.equal(calls.length, 3, `the run_workflow call and two steps' children: ${JSON.stringify(calls.map((c) => c.title))}`);
    for (const c of calls) {
      const fin = finalToolState(t.updates, c.toolCallId);
      assert.ok(TERMINAL.has(fin.status), `${c.title}: ended (${fin.status})`);
    }
    const byStep = Object.fromEntries(calls.filter((c) => c._meta?.pixir?.stepId).map((c) => [c._meta.pixir.stepId, c.toolCallId]));
    assert.equal(finalToolState(t.updates, byStep.quick).status, "completed");
    assert.equal(finalToolState(t.updates, byStep.stuck).status, "failed");
    const wf = calls.find((c) => !c._meta?.pixir?.stepId);
    assert.equal(finalToolState(t.updates, wf.toolCallId).status, "failed", "a cancelled workflow is never shown completed");
  }));
