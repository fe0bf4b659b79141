// Unit checks of the schema oracle itself (no binary needed).

import { test } from "node:test";
import assert from "node:assert/strict";
import { SCHEMA_PATH, schemaValidator, validateAgentMessage } from "../schema.mjs";

const methods = { 1: "initialize", 2: "session/new", 3: "session/prompt", 4: "session/set_mode", 5: "session/list" };
const methodForId = (id) => methods[id];
const ok = (msg) => assert.deepEqual(validateAgentMessage(msg, methodForId), [], `expected valid: ${JSON.stringify(msg)}`);
const rejected = (msg, def) => {
  const problems = validateAgentMessage(msg, methodForId);
  assert.ok(problems.length > 0, `expected rejection: ${JSON.stringify(msg)}`);
  if (def) assert.ok(problems.some((p) => p.def === def), `expected a ${def} problem, got ${JSON.stringify(problems.map((p) => p.def))}`);
};
const update = (u) => ({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s1", update: u } });

test("schema comes from the installed SDK package", () => {
  assert.match(SCHEMA_PATH, /node_modules\/@agentclientprotocol\/sdk\/schema\/v1\/schema\.json$/);
  const { schema } = schemaValidator();
  for (const def of ["InitializeResponse", "SessionNotification", "RequestPermissionRequest", "Error", "PromptResponse"])
    assert.ok(schema.$defs[def], `missing $defs/${def}`);
});

test("good responses pass", () => {
  ok({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1, agentCapabilities: { loadSession: true }, agentInfo: { name: "pixir", version: "0" } } });
  ok({ jsonrpc: "2.0", id: 2, result: { sessionId: "abc", modes: { currentModeId: "auto", availableModes: [{ id: "auto", name: "Auto" }] } } });
  ok({ jsonrpc: "2.0", id: 3, result: { stopReason: "end_turn" } });
  ok({ jsonrpc: "2.0", id: 4, result: {} });
  ok({ jsonrpc: "2.0", id: 5, result: { sessions: [{ sessionId: "a", cwd: "/tmp", title: "t", updatedAt: "2026-01-01T00:00:00Z" }] } });
  ok({ jsonrpc: "2.0", id: 3, error: { code: -32602, message: "Invalid params" } });
  ok({ jsonrpc: "2.0", id: 3, error: { code: -1, message: "custom", data: { x: 1 } } });
});

test("bad responses are rejected", () => {
  rejected({ jsonrpc: "2.0", id: 1, result: {} }, "InitializeResponse"); // protocolVersion missing
  rejected({ jsonrpc: "2.0", id: 1, result: { protocolVersion: "1" } }, "InitializeResponse");
  rejected({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 70000 } }, "InitializeResponse"); // uint16
  rejected({ jsonrpc: "2.0", id: 2, result: { modes: null } }, "NewSessionResponse"); // no sessionId
  rejected({ jsonrpc: "2.0", id: 3, result: { stopReason: "done" } }, "PromptResponse");
  rejected({ jsonrpc: "2.0", id: 3, error: { code: -32602 } }, "Error"); // message missing
  rejected({ jsonrpc: "2.0", id: 3, error: { code: 1.5, message: "x" } }, "Error");
  rejected({ jsonrpc: "2.0", id: 3, result: { stopReason: "end_turn" }, error: { code: 1, message: "x" } }, "envelope");
  rejected({ jsonrpc: "2.0", id: 3 }, "envelope");
  rejected({ jsonrpc: "1.0", id: 3, result: { stopReason: "end_turn" } }, "envelope");
  rejected({ id: 3, result: { stopReason: "end_turn" } }, "envelope");
  rejected({ jsonrpc: "2.0", id: 99, result: {} }, "envelope"); // unknown id
  rejected({ jsonrpc: "2.0", id: 5, result: { sessions: [{ sessionId: "a" }] } }, "ListSessionsResponse"); // cwd missing
});

test("good session/update notifications pass", () => {
  ok(update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } }));
  ok(update({ sessionUpdate: "user_message_chunk", content: { type: "resource_link", uri: "file:///a", name: "a" } }));
  ok(update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Write notes.txt", kind: "edit", status: "pending", rawInput: { path: "notes.txt" } }));
  ok(update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", content: [{ type: "diff", path: "/w/notes.txt", oldText: null, newText: "hi\n" }] }));
  ok(update({ sessionUpdate: "current_mode_update", currentModeId: "ask" }));
  ok(update({ sessionUpdate: "plan", entries: [{ content: "x", priority: "high", status: "pending" }] }));
});

test("bad session/update notifications are rejected", () => {
  rejected(update({ sessionUpdate: "agent_message", content: { type: "text", text: "hi" } }), "SessionNotification");
  rejected(update({ sessionUpdate: "agent_message_chunk", content: { type: "txt", text: "hi" } }), "SessionNotification");
  rejected(update({ sessionUpdate: "agent_message_chunk", content: { type: "text" } }), "SessionNotification");
  rejected(update({ sessionUpdate: "tool_call", toolCallId: "t1" }), "SessionNotification"); // title missing
  rejected(update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "x", kind: "write" }), "SessionNotification");
  rejected(update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "done" }), "SessionNotification");
  rejected(update({ sessionUpdate: "tool_call_update", toolCallId: "t1", content: [{ type: "diff", path: "/a" }] }), "SessionNotification");
  rejected({ jsonrpc: "2.0", method: "session/update", params: { update: { sessionUpdate: "current_mode_update", currentModeId: "x" } } }, "SessionNotification");
  rejected({ jsonrpc: "2.0", method: "session/updates", params: {} }, "AgentNotification");
});

test("agent->client requests are checked against their request defs", () => {
  const perm = (params) => ({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params });
  ok(
    perm({
      sessionId: "s1",
      toolCall: { toolCallId: "t1" },
      options: [
        { optionId: "a", name: "Allow once", kind: "allow_once" },
        { optionId: "r", name: "Reject", kind: "reject_once" },
      ],
    }),
  );
  rejected(perm({ sessionId: "s1", toolCall: { toolCallId: "t1" }, options: [{ optionId: "a", name: "x", kind: "allow" }] }), "RequestPermissionRequest");
  rejected(perm({ sessionId: "s1", options: [] }), "RequestPermissionRequest");
  ok({ jsonrpc: "2.0", id: "r1", method: "fs/read_text_file", params: { sessionId: "s1", path: "/a" } });
  rejected({ jsonrpc: "2.0", id: "r1", method: "fs/write_text_file", params: { sessionId: "s1", path: "/a" } }, "WriteTextFileRequest");
  ok({ jsonrpc: "2.0", id: 7, method: "terminal/create", params: { sessionId: "s1", command: "ls" } });
  rejected({ jsonrpc: "2.0", id: 7, method: "terminal/output", params: { sessionId: "s1" } }, "TerminalOutputRequest");
  rejected({ jsonrpc: "2.0", id: 7, method: "fs/delete", params: {} }, "AgentRequest");
  ok({ jsonrpc: "2.0", id: 7, method: "_pixir/custom", params: {} });
});

test("normalizeConversation merges text chunks and folds tool calls", async () => {
  const { normalizeConversation } = await import("../harness.mjs");
  const txt = (kind, text) => ({ sessionUpdate: kind, content: { type: "text", text } });
  const got = normalizeConversation([
    txt("user_message_chunk", "hel"),
    txt("user_message_chunk", "lo"),
    txt("agent_thought_chunk", "hmm"),
    txt("agent_message_chunk", "Hi "),
    { sessionUpdate: "usage_update", used: 1, size: 2 },
    txt("agent_message_chunk", "there"),
    { sessionUpdate: "tool_call", toolCallId: "t1", title: "Write a", kind: "edit", status: "pending", rawInput: {} },
    { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" },
    { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", content: [{ type: "diff", path: "/a", newText: "x" }] },
    txt("agent_message_chunk", "done"),
  ]);
  assert.deepEqual(got, [
    { type: "user_message_chunk", text: "hello" },
    { type: "agent_thought_chunk", text: "hmm" },
    { type: "agent_message_chunk", text: "Hi there" },
    { type: "tool_call", toolCallId: "t1", title: "Write a", kind: "edit", status: "completed", content: [{ type: "diff", path: "/a", newText: "x" }] },
    { type: "agent_message_chunk", text: "done" },
  ]);
});
