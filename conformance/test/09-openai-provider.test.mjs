// Scenario 9: `pixir acp --provider openai --base-url …` against a fake
// OpenAI-compatible server (node:http) that streams the real Chat
// Completions SSE wire format: a turn with two parallel tool calls whose
// arguments arrive in fragments, then reasoning, text and usage; and a
// failure (wrong key) that ends the turn readably. The harness validates
// every agent message against the ACP v1 schema.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withFixture, chunkText, toolCalls, toolCallUpdates, finalToolState, sleep, TEST_TIMEOUT_MS } from "../harness.mjs";

// The scripted provider's script is passed by the harness with --script;
// the openai provider ignores it.
const UNUSED_SCRIPT = `
[[rule]]
  [[rule.reply]]
  text = "the scripted provider must not answer"
`;

const CONTENT = "written by a streamed tool call\n";
const THOUGHT = "Both tools worked; I can answer.";
const ANSWER = "I wrote notes.txt and read it back.";
const CONTEXT_WINDOW = 32768;

/** One chat.completion.chunk event as OpenAI sends it. */
function chunk(delta, finish = null, usage = null) {
  return (
    "data: " +
    JSON.stringify({
      id: "chatcmpl-CLconf",
      object: "chat.completion.chunk",
      created: 1759312345,
      model: "m-2025-04-14",
      service_tier: "default",
      system_fingerprint: "fp_4fce0778af",
      choices: delta === null ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      usage,
      obfuscation: "x",
    }) +
    "\n\n"
  );
}

const usage = (p, c) => ({ prompt_tokens: p, completion_tokens: c, total_tokens: p + c, prompt_tokens_details: { cached_tokens: 0 } });

/** A tool call: id and name first with empty arguments, then the arguments in pieces. */
function toolCall(index, id, name, pieces) {
  return [
    chunk({ tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] }),
    ...pieces.map((p) => chunk({ tool_calls: [{ index, function: { arguments: p } }] })),
  ];
}

const FIRST = [
  chunk({ role: "assistant", content: null, refusal: null }),
  ...toolCall(0, "call_w1", "write", ['{"pa', 'th": "not', 'es.txt", "cont', `ent": ${JSON.stringify(CONTENT).slice(0, 12)}`, `${JSON.stringify(CONTENT).slice(12)}}`]),
  ...toolCall(1, "call_r2", "read", ['{"path":', ' "notes.txt"}']),
  chunk({}, "tool_calls"),
  chunk(null, null, usage(1180, 61)),
  "data: [DONE]\n\n",
];

const SECOND = [
  chunk({ role: "assistant", content: null, reasoning_content: "" }),
  ...["Both tools", " worked;", " I can answer."].map((r) => chunk({ content: null, reasoning_content: r })),
  ...["I wrote", " notes.txt", " and read", " it back."].map((t) => chunk({ content: t, reasoning_content: null })),
  chunk({ content: "" }, "stop"),
  chunk(null, null, usage(1302, 11)),
  "data: [DONE]\n\n",
];

/**
 * A fake server: each request to /v1/chat/completions is answered by the
 * next handler (the last repeats). Requests are recorded with their bodies.
 */
async function fakeOpenAI(handlers) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (d) => (body += d));
    req.on("end", async () => {
      const n = requests.length;
      let json = null;
      try {
        json = JSON.parse(body);
      } catch {}
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: json });
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `unknown path ${req.url}`, type: "invalid_request_error" } }));
        return;
      }
      await handlers[Math.min(n, handlers.length - 1)](res, json);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    requests,
    baseURL: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** Streams SSE events, each split in two writes, with a pause between events. */
function stream(events, pauseMs = 5) {
  return async (res) => {
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    for (const ev of events) {
      const half = Math.floor(ev.length / 2);
      res.write(ev.slice(0, half));
      res.write(ev.slice(half));
      await sleep(pauseMs);
    }
    res.end();
  };
}

function errorReply(status, error) {
  return async (res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify({ error }));
  };
}

function providerArgs(server) {
  return {
    extraArgs: ["--provider", "openai", "--base-url", server.baseURL, "--model", "m"],
    // Only what the test sets: the machine's own provider settings stay out.
    env: { PIXIR_PROVIDER: "", PIXIR_MODEL: "", PIXIR_PROFILE: "", OPENAI_BASE_URL: "", OPENAI_API_KEY: "sk-conformance" },
  };
}

function statusTrail(updates, id) {
  const trail = [];
  for (const u of toolCallUpdates(updates, id)) {
    if (u.status == null) continue;
    if (trail[trail.length - 1] !== u.status) trail.push(u.status);
  }
  return trail;
}

test("openai provider: a turn with fragmented parallel tool calls, reasoning, text and usage", { timeout: TEST_TIMEOUT_MS }, async () => {
  const server = await fakeOpenAI([stream(FIRST), stream(SECOND)]);
  try {
    await withFixture(async (f) => {
      writeFileSync(join(f.sandbox.home, "config.toml"), `context_window = ${CONTEXT_WINDOW}\n`);
      const a = await f.start(UNUSED_SCRIPT, providerArgs(server));
      const ws = f.sandbox.workspace;
      const { sessionId } = await a.newSession(ws);
      const t = await a.turn(sessionId, "write notes.txt, then read it");
      const ups = t.updates;
      assert.equal(t.response.stopReason, "end_turn", `stopReason: ${JSON.stringify(t.response)}`);

      // Two tool calls, announced, run and completed in order.
      const calls = toolCalls(ups);
      assert.deepEqual(calls.map((c) => c.toolCallId), ["call_w1", "call_r2"], `tool calls: ${JSON.stringify(calls)}`);
      const [w, r] = calls;
      assert.equal(w.kind, "edit");
      assert.equal(r.kind, "read");
      assert.deepEqual(w.rawInput, { path: "notes.txt", content: CONTENT }, "the argument fragments were joined");
      assert.deepEqual(r.rawInput, { path: "notes.txt" });
      for (const c of calls) assert.deepEqual(statusTrail(ups, c.toolCallId), ["pending", "in_progress", "completed"], `${c.toolCallId} statuses`);
      const diffs = (finalToolState(ups, "call_w1").content ?? []).filter((c) => c.type === "diff");
      assert.equal(diffs.length, 1, "the write shows its diff");
      assert.equal(diffs[0].newText, CONTENT);
      assert.ok(existsSync(join(ws, "notes.txt")), "notes.txt was not written");
      assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), CONTENT);

      // Reasoning and text streamed, in several chunks each.
      assert.equal(chunkText(ups, "agent_thought_chunk"), THOUGHT);
      assert.equal(chunkText(ups), ANSWER);
      assert.ok(ups.filter((u) => u.sessionUpdate === "agent_message_chunk").length >= 4, "text is streamed, not sent whole");

      // Usage reached the editor, sized by the configured context window.
      const usageUpdates = ups.filter((u) => u.sessionUpdate === "usage_update");
      assert.deepEqual(
        usageUpdates.map((u) => [u.used, u.size]),
        [[1180 + 61, CONTEXT_WINDOW], [1302 + 11, CONTEXT_WINDOW]],
        `usage_update: ${JSON.stringify(usageUpdates)}`,
      );
      assert.deepEqual(t.late, [], `conversation updates after the prompt response: ${JSON.stringify(t.late)}`);

      // What the server received: the second request carries both results,
      // each under the id of its call.
      assert.equal(server.requests.length, 2);
      for (const req of server.requests) {
        assert.equal(req.headers.authorization, "Bearer sk-conformance");
        assert.equal(req.body.model, "m");
        assert.equal(req.body.stream, true);
      }
      assert.ok(server.requests[0].body.tools.some((t) => t.type === "function" && t.function.name === "write"), "tools are offered as functions");
      const msgs = server.requests[1].body.messages;
      const assistant = msgs.find((m) => m.role === "assistant" && m.tool_calls);
      assert.deepEqual(
        assistant.tool_calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]),
        [["call_w1", "write", { path: "notes.txt", content: CONTENT }], ["call_r2", "read", { path: "notes.txt" }]],
      );
      const results = msgs.filter((m) => m.role === "tool");
      assert.deepEqual(results.map((m) => m.tool_call_id), ["call_w1", "call_r2"]);
      assert.match(results[1].content, /"ok":true/);
      assert.ok(results[1].content.includes("written by a streamed tool call"), `the read result: ${results[1].content}`);

      // The Log holds the usage.
      const log = readFileSync(join(ws, ".pixir", "sessions", `${sessionId}.ndjson`), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      const usageEvents = log.filter((e) => e.type === "provider_usage");
      assert.equal(usageEvents.length, 2);
      assert.equal(usageEvents[1].data.provider, "openai");
      assert.equal(usageEvents[1].data.input_tokens, 1302);
    });
  } finally {
    await server.close();
  }
});

test("openai provider: a wrong key ends the turn readably and the session goes on", { timeout: TEST_TIMEOUT_MS }, async () => {
  const server = await fakeOpenAI([
    errorReply(401, { message: "Incorrect API key provided: sk-conf*****. You can find your API key at https://platform.openai.com/account/api-keys.", type: "invalid_request_error", param: null, code: "invalid_api_key" }),
    stream([chunk({ role: "assistant", content: "" }), chunk({ content: "Hello" }), chunk({ content: " again." }), chunk({}, "stop"), chunk(null, null, usage(1180, 3)), "data: [DONE]\n\n"]),
  ]);
  try {
    await withFixture(async (f) => {
      const a = await f.start(UNUSED_SCRIPT, providerArgs(server));
      const { sessionId } = await a.newSession();
      const t = await a.turn(sessionId, "hello");
      assert.equal(t.response.stopReason, "end_turn", `stopReason: ${JSON.stringify(t.response)}`);
      const text = chunkText(t.updates);
      assert.match(text, /rejected the API key \(401 Unauthorized invalid_api_key\)/, text);
      assert.match(text, /set OPENAI_API_KEY to a valid key/, text);
      assert.equal(t.updates.filter((u) => u.sessionUpdate === "usage_update").length, 0, "no usage for a failed call");

      const again = await a.turn(sessionId, "hello");
      assert.equal(again.response.stopReason, "end_turn");
      assert.equal(chunkText(again.updates), "Hello again.");
      assert.equal(server.requests.length, 2, "a 401 is not retried");
    });
  } finally {
    await server.close();
  }
});
