package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A session run with --provider openai --base-url … --model … and resumed
// by hand without those flags went on with what the environment chose
// (nothing set: the offline scripted model), exit 0, no word of it (qa34p).
// A resume goes on with the provider, model and base URL the session last
// ran with, a workflow in it too, unless flags choose another.
func TestAResumeTypedByHandKeepsTheModelTheSessionRanWith(t *testing.T) {
	srv := newFakeModel(t, oaAnswer("Hello from gpt-x.", 100, 5))
	providerEnv(t)
	e := newRunEnv(t)
	stdout, stderr, code := e.pixir("run", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-x", "hi")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Hello from gpt-x.")
	id := sessionOf(t, e.ws, stderr)
	require.Len(t, srv.received(), 1)

	stdout, stderr, code = e.pixir("resume", id, "go on")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Hello from gpt-x.", "the session's own model answered")
	require.Len(t, srv.received(), 2, "the server the session ran with was asked")
	require.Contains(t, string(srv.received()[1].Body), `"model":"gpt-x"`)
	stdout, stderr, code = e.pixir("inspect", id)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "gpt-x")
	require.NotContains(t, stdout, "scripted")

	// A workflow in it: its Subagents ask the same model.
	wf := e.file("wf.yaml", "name: look\nsteps:\n  - {id: one, agent: explorer, task: Look.}\n")
	stdout, stderr, code = e.pixir("resume", id, "--workflow", wf)
	require.Equal(t, exitOK, code, stderr)
	require.NotContains(t, stdout, "Scripted step")
	require.Len(t, srv.received(), 3, "the workflow's step asked the session's model")

	// --model alone changes the model of the provider it ran with.
	_, stderr, code = e.pixir("resume", id, "--model", "gpt-y", "now with y")
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, srv.received(), 4, "the session's server was asked")
	require.Contains(t, string(srv.received()[3].Body), `"model":"gpt-y"`)

	// Flags choose another; from then on the session goes on with it.
	stdout, stderr, code = e.pixir("resume", "--provider", "scripted", id, "now offline")
	require.Equal(t, exitOK, code, stderr)
	require.NotContains(t, stdout, "Hello from gpt-x.")
	_, stderr, code = e.pixir("resume", id, "still offline")
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, srv.received(), 4, "the server was not asked again")
}

// What the session ran with cannot be had now (its API key is unset): the
// resume is refused, naming what is missing and the flag to choose
// another, never run on a different model.
func TestAResumeWhoseModelCannotBeHadIsRefused(t *testing.T) {
	srv := newFakeModel(t, sseReply(0, concat(
		[]string{
			anMessageStart(100),
			anEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			anDelta(0, `{"type":"text_delta","text":"Hello from claude."}`),
			anStop(0),
		},
		anEnd("end_turn", 5),
	)...))
	providerEnv(t, "ANTHROPIC_API_KEY", "sk-ant-e2e")
	e := newRunEnv(t)
	stdout, stderr, code := e.pixir("run", "--provider", "anthropic", "--base-url", srv.URL, "--model", "claude-test", "hi")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Hello from claude.")
	id := sessionOf(t, e.ws, stderr)

	t.Setenv("ANTHROPIC_API_KEY", "")
	for _, args := range [][]string{{"resume", id, "go on"}, {"resume", id, "--workflow", e.file("wf.yaml", "steps:\n  - {id: one, agent: explorer, task: Look.}\n")}} {
		stdout, stderr, code = e.pixir(args...)
		require.Equal(t, exitUsage, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Contains(t, stderr, "session "+id+" last ran with the anthropic provider, model claude-test, at "+srv.URL)
		require.Contains(t, stderr, "ANTHROPIC_API_KEY is not set")
		require.Contains(t, stderr, "--provider")
		require.NotContains(t, stdout, "Scripted")
	}
	require.Len(t, srv.received(), 1)
	stdout, _, _ = e.pixir("inspect", id)
	require.NotContains(t, stdout, "scripted")
}
