package doctor

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReport(t *testing.T) {
	r := &Report{Provider: "openai", Profile: "local", Model: "qwen2.5-coder", BaseURL: "http://localhost:11434/v1"}
	r.Add(Check{Name: "API key", Status: OK, Detail: "none"})
	require.True(t, r.OK)
	r.Add(Check{Name: "context", Status: Warn, Detail: "unknown", Fix: "set context_window"})
	require.True(t, r.OK, "a warning does not fail the report")
	r.Add(Check{Name: "server", Status: Fail, Detail: "cannot reach it: connection refused", Fix: "start the server"})
	require.False(t, r.OK)

	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	require.Equal(t, `provider openai (profile "local"), model qwen2.5-coder, http://localhost:11434/v1

  ok    API key    none
  warn  context    unknown
                   fix: set context_window
  FAIL  server     cannot reach it: connection refused
                   fix: start the server

1 check(s) failed.
`, text.String())

	var js bytes.Buffer
	require.NoError(t, r.WriteJSON(&js))
	var back Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.Equal(t, *r, back)
	require.Contains(t, js.String(), `"status": "fail"`)
}
