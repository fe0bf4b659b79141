package openai

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider/doctor"
	"github.com/pixir-go/pixir/runtime/provider/internal/wiretest"
)

func statuses(checks []doctor.Check) map[string]doctor.Status {
	out := map[string]doctor.Status{}
	for _, c := range checks {
		out[c.Name] = c.Status
	}
	return out
}

func find(t *testing.T, checks []doctor.Check, name string) doctor.Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, checks)
	return doctor.Check{}
}

func modelList(t *testing.T, name string) wiretest.Reply {
	return wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: fixture(t, name)}
}

func TestCheck(t *testing.T) {
	t.Run("all good", func(t *testing.T) {
		srv := wiretest.New(t, modelList(t, "models_openai.json"))
		p := newProvider(t, srv, "sk-test")
		checks := p.Check(context.Background(), "gpt-4.1-mini")
		require.Equal(t, map[string]doctor.Status{"base URL": doctor.OK, "API key": doctor.OK, "server": doctor.OK, "model": doctor.OK, "context": doctor.OK}, statuses(checks))
		req := srv.Requests()[0]
		require.Equal(t, "/v1/models", req.Path)
		require.Equal(t, "Bearer sk-test", req.Header.Get("Authorization"))
	})
	t.Run("an Ollama model by its short name", func(t *testing.T) {
		srv := wiretest.New(t, modelList(t, "models_ollama.json"))
		p := newProvider(t, srv, "")
		checks := p.Check(context.Background(), "qwen2.5-coder")
		require.Equal(t, doctor.OK, find(t, checks, "model").Status)
		require.Equal(t, doctor.OK, find(t, checks, "API key").Status, "no key is fine for a local server")
	})
	t.Run("model not listed", func(t *testing.T) {
		srv := wiretest.New(t, modelList(t, "models_ollama.json"))
		p := newProvider(t, srv, "")
		c := find(t, p.Check(context.Background(), "mistral"), "model")
		require.Equal(t, doctor.Fail, c.Status)
		require.Contains(t, c.Detail, `"mistral" is not among the models the server lists: qwen2.5-coder:latest, llama3.2:3b`)
		require.Contains(t, c.Fix, "--model")
	})
	t.Run("wrong key", func(t *testing.T) {
		srv := wiretest.New(t, wiretest.Reply{Status: 401, Body: fixture(t, "error_401.json")})
		p := newProvider(t, srv, "sk-wrong")
		c := find(t, p.Check(context.Background(), "gpt-4.1-mini"), "server")
		require.Equal(t, doctor.Fail, c.Status)
		require.Contains(t, c.Detail, "rejected the API key")
		require.Equal(t, "set OPENAI_API_KEY to a valid key", c.Fix)
	})
	t.Run("unreachable", func(t *testing.T) {
		p := New(Config{BaseURL: wiretest.ClosedURL(t) + "/v1", Policy: testPolicy()})
		defer p.CloseIdleConnections()
		c := find(t, p.Check(context.Background(), "m"), "server")
		require.Equal(t, doctor.Fail, c.Status)
		require.Contains(t, c.Detail, "connection refused")
		require.Contains(t, c.Fix, "start the server")
	})
	t.Run("not a URL", func(t *testing.T) {
		p := New(Config{BaseURL: "localhost:11434"})
		require.Equal(t, doctor.Fail, find(t, p.Check(context.Background(), "m"), "base URL").Status)
	})
}
