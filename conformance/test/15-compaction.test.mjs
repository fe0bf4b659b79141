// Scenario 15: compaction. `pixir acp --provider openai` against a fake
// OpenAI-compatible server with a small context window (it refuses a
// request over it with 400 context_length_exceeded, as OpenAI does). A long
// session is compacted before it outgrows the window; a client that
// advertised `session.compaction` sees `compaction_update` (in_progress,
// then completed with the summary) and `compaction_summary_chunk`, live and
// on session/load in a fresh process; a client that did not advertise it
// sees none. The harness validates every agent message against the ACP v1
// schema.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acp, withFixture, TEST_TIMEOUT_MS } from "../harness.mjs";

const UNUSED_SCRIPT = `
[[rule]]
  [[rule.reply]]
  text = "the scripted provider must not answer"
`;

const WINDOW = 20000;
const FILES = 24;

function chunk(delta, finish = null, usage = null) {
  return (
    "data: " +
    JSON.stringify({
      id: "chatcmpl-CLcompact",
      object: "chat.completion.chunk",
      created: 1759312345,
      model: "m-2025-04-14",
      choices: delta === null ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      usage,
    }) +
    "\n\n"
  );
}

const usage = (p, c) => ({ prompt_tokens: p, completion_tokens: c, total_tokens: p + c });

function text(t, tokens) {
  return [chunk({ role: "assistant", content: "" }), ...t.split(/(?<= )/).map((w) => chunk({ content: w })), chunk({}, "stop"), chunk(null, null, usage(tokens, 10)), "data: [DONE]\n\n"];
}

/**
 * The server counts a request's tokens as a quarter of its body's bytes;
 * one over WINDOW is refused. A request without tools asks for a summary;
 * any other reads the file its last user message names, then says so.
 */
async function windowedServer() {
  const tokens = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const n = Math.floor(Buffer.byteLength(body) / 4);
      tokens.push(n);
      const json = JSON.parse(body);
      if (n > WINDOW) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            error: {
              message: `This model's maximum context length is ${WINDOW} tokens. However, your messages resulted in ${n} tokens. Please reduce the length of the messages.`,
              type: "invalid_request_error",
              param: "messages",
              code: "context_length_exceeded",
            },
          }),
        );
        return;
      }
      let events;
      const last = json.messages[json.messages.length - 1];
      if (!json.tools?.length) events = text(`SUMMARY ${tokens.length}: the user had the files read one by one.`, n);
      else if (last.role === "tool") events = text("I read it.", n);
      else
        events = [
          chunk({ role: "assistant", content: null }),
          chunk({ tool_calls: [{ index: 0, id: `call_${tokens.length}`, type: "function", function: { name: "read", arguments: "" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ path: last.content.replace(/^read /, "") }) } }] }),
          chunk({}, "tool_calls"),
          chunk(null, null, usage(n, 12)),
          "data: [DONE]\n\n",
        ];
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
      for (const ev of events) res.write(ev);
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    tokens,
    baseURL: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => new Promise((resolve) => (server.closeAllConnections?.(), server.close(() => resolve()))),
  };
}

function providerArgs(server) {
  return {
    extraArgs: ["--provider", "openai", "--base-url", server.baseURL, "--model", "m"],
    env: { PIXIR_PROVIDER: "", PIXIR_MODEL: "", PIXIR_PROFILE: "", OPENAI_BASE_URL: "", OPENAI_API_KEY: "sk-conformance" },
  };
}

function writeFiles(ws) {
  for (let i = 0; i < FILES; i++) writeFileSync(join(ws, `f${i}.txt`), `line ${i} of file ${i}; `.repeat(150));
}

const WITH_COMPACTION = { clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, session: { compaction: {} } } };

const compactions = (ups) => ups.filter((u) => u.sessionUpdate === "compaction_update" || u.sessionUpdate === "compaction_summary_chunk");

test("compaction: a long session stays under the window; an opted-in client sees each compaction, live and on load", { timeout: TEST_TIMEOUT_MS }, async () => {
  const server = await windowedServer();
  try {
    await withFixture(async (f) => {
      writeFileSync(join(f.sandbox.home, "config.toml"), `context_window = ${WINDOW}\n`);
      writeFiles(f.sandbox.workspace);
      const a = await f.start(UNUSED_SCRIPT, { init: false, ...providerArgs(server) });
      await a.initialize(WITH_COMPACTION);
      const { sessionId } = await a.newSession();
      for (let i = 0; i < FILES; i++) {
        const t = await a.turn(sessionId, `read f${i}.txt`);
        assert.equal(t.response.stopReason, "end_turn");
        assert.deepEqual(t.late, [], "nothing after the prompt response");
      }
      assert.ok(server.tokens.every((n) => n <= WINDOW), `a request went past the window: ${server.tokens}`);

      const live = compactions(a.updates(sessionId));
      const completed = live.filter((u) => u.sessionUpdate === "compaction_update" && u.status === "completed");
      assert.ok(completed.length > 0, `${FILES} files of 3 KB do not fit ${WINDOW} tokens`);
      for (const c of completed) {
        const mine = live.filter((u) => u.compactionId === c.compactionId);
        assert.deepEqual(mine[0], { sessionUpdate: "compaction_update", compactionId: c.compactionId, status: "in_progress" }, "it starts in progress");
        const streamed = mine.filter((u) => u.sessionUpdate === "compaction_summary_chunk").map((u) => u.content.text).join("");
        assert.match(streamed, /^SUMMARY \d+/, "the summary streams as the model writes it");
        assert.equal(c.summary[0].text, streamed, "the completed update carries the whole summary");
        assert.equal(c._meta.pixir.method, "model");
      }

      // A fresh process replays the compactions where they happened.
      await a.close();
      const b = await f.start(UNUSED_SCRIPT, { init: false, ...providerArgs(server) });
      await b.initialize(WITH_COMPACTION);
      await b.request(acp.methods.agent.session.load, { sessionId, cwd: f.sandbox.workspace, mcpServers: [] });
      const replay = b.updates(sessionId);
      const replayed = compactions(replay);
      assert.deepEqual(
        replayed.map((u) => [u.compactionId, u.status, u.summary[0].text]),
        completed.map((u) => [u.compactionId, u.status, u.summary[0].text]),
        "each compaction replays once, completed",
      );
      const users = replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
      assert.equal(users.length, FILES, "the whole conversation replays");
      const t = await b.turn(sessionId, "read f0.txt");
      assert.equal(t.response.stopReason, "end_turn");
      assert.ok(server.tokens.every((n) => n <= WINDOW), `a request went past the window: ${server.tokens}`);
    });
  } finally {
    await server.close();
  }
});

test("compaction: a client that did not advertise session.compaction sees no compaction update", { timeout: TEST_TIMEOUT_MS }, async () => {
  const server = await windowedServer();
  try {
    await withFixture(async (f) => {
      // No window configured: the server's refusal teaches it.
      writeFiles(f.sandbox.workspace);
      const a = await f.start(UNUSED_SCRIPT, providerArgs(server));
      const { sessionId } = await a.newSession();
      for (let i = 0; i < FILES; i++) {
        const t = await a.turn(sessionId, `read f${i}.txt`);
        assert.equal(t.response.stopReason, "end_turn");
      }
      assert.equal(server.tokens.filter((n) => n > WINDOW).length, 1, `one refusal, then none: ${server.tokens}`);
      assert.deepEqual(compactions(a.updates(sessionId)), []);
      const log = readFileSync(join(f.sandbox.workspace, ".pixir", "sessions", `${sessionId}.ndjson`), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      const reasons = log.filter((e) => e.type === "compaction").map((e) => e.data.reason);
      assert.equal(reasons[0], "context_length", `compactions in the Log: ${reasons}`);
    });
  } finally {
    await server.close();
  }
});
