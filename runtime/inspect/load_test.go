package inspect

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
)

// writeSession writes a Log (and, with meta, its sidecar) in workspace
// ws as the runtime does.
func writeSession(t *testing.T, ws, id string, meta *runtime.Meta, events ...runtime.Event) string {
	t.Helper()
	path := filepath.Join(runtime.SessionsDir(ws), id+".ndjson")
	log, err := runtime.CreateLog(path)
	require.NoError(t, err)
	for i := range events {
		e := events[i]
		e.Seq, e.SessionID = 0, id
		require.NoError(t, log.Append(&e))
	}
	require.NoError(t, log.Close())
	if meta != nil {
		b, err := json.Marshal(meta)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(runtime.SessionsDir(ws), id+".json"), b, 0o644))
	}
	return path
}

func workspace(t *testing.T) string {
	t.Helper()
	root, err := Workspace(t.TempDir())
	require.NoError(t, err)
	return root
}

func TestInspectLocate(t *testing.T) {
	ws := workspace(t)
	writeSession(t, ws, "01aa-one", nil)
	writeSession(t, ws, "01ab-two", nil)
	childLog := filepath.Join(ws, runtime.StateDir, "subagents", "sa-1", "c-1.ndjson")
	l, err := runtime.CreateLog(childLog)
	require.NoError(t, err)
	require.NoError(t, l.Close())

	cases := []struct {
		id, want string
		child    bool
		err      error
		msg      []string
	}{
		{id: "01aa-one", want: "01aa-one"},
		{id: "01ab", want: "01ab-two"},
		{id: "c-1", want: "c-1", child: true},
		{id: "01a", err: ErrAmbiguous, msg: []string{"01aa-one, 01ab-two"}},
		{id: "zz", err: runtime.ErrSessionNotFound, msg: []string{"no session zz", runtime.SessionsDir(ws), "pixir sessions --cwd " + ws}},
		{id: "../etc", err: runtime.ErrSessionNotFound, msg: []string{`"../etc" is not a session id`}},
		{id: "c", err: runtime.ErrSessionNotFound, msg: []string{"no session c"}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			got, err := Locate(ws, c.id)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				for _, m := range c.msg {
					require.Contains(t, err.Error(), m)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got.ID)
			require.Equal(t, ws, got.Workspace)
			require.Equal(t, c.child, got.Child)
			require.FileExists(t, got.Log)
		})
	}
}

func TestInspectLocateInAWorkspaceWithoutSessions(t *testing.T) {
	_, err := Locate(t.TempDir(), "01aa")
	require.ErrorIs(t, err, runtime.ErrSessionNotFound)
	_, err = Locate(filepath.Join(t.TempDir(), "missing"), "01aa")
	require.Error(t, err)
	require.NotErrorIs(t, err, runtime.ErrSessionNotFound)
}

func TestInspectLoadToleratesATornLastLineAndReadsTheMeta(t *testing.T) {
	ws := workspace(t)
	created := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	meta := &runtime.Meta{ID: "s1", Workspace: ws, Title: "the title", Mode: runtime.ModeAsk, Model: "m", CreatedAt: created, UpdatedAt: created.Add(time.Minute)}
	path := writeSession(t, ws, "s1", meta, logOf(t, user("hello there"), say("hi"), user("again"))...)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(`{"id":"x","session_id":"s1","seq":4,"type":"assist`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	found, err := Locate(ws, "s1")
	require.NoError(t, err)
	s, events, err := Load(found)
	require.NoError(t, err)
	require.Len(t, events, 3)
	require.Equal(t, LoadInfo{Events: 3, TornBytes: 50}, s.Load)
	require.Equal(t, "the title", s.Title)
	require.Equal(t, "ask", s.Mode)
	require.Equal(t, "m", s.Model)
	require.Equal(t, created, *s.CreatedAt)
	require.Equal(t, path, s.Log)
	require.Len(t, s.Turns, 2)

	n, err := CountTurns(path)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the torn line is not counted")
}

func TestInspectLoadWithoutMetaTitlesFromTheFirstPrompt(t *testing.T) {
	ws := workspace(t)
	writeSession(t, ws, "s2", nil, logOf(t, user("  fix   the\ntests  "), say("ok"))...)
	found, err := Locate(ws, "s2")
	require.NoError(t, err)
	s, _, err := Load(found)
	require.NoError(t, err)
	require.Equal(t, "fix the tests", s.Title)
	require.Empty(t, s.Mode)
	require.Nil(t, s.CreatedAt)
}

func TestInspectCountTurnsDecodesLinesThatOnlyLookLikeUserMessages(t *testing.T) {
	ws := workspace(t)
	long := make([]byte, 200<<10) // longer than the reader's buffer
	for i := range long {
		long[i] = 'x'
	}
	path := writeSession(t, ws, "s3", nil, logOf(t,
		user("one"),
		ev{runtime.EventToolCall, `{"tool_call_id":"c","name":"bash","arguments":{"type":"user_message"}}`},
		user(string(long)),
		say("done"),
	)...)
	n, err := CountTurns(path)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

func TestInspectList(t *testing.T) {
	ws := workspace(t)
	older := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	writeSession(t, ws, "old", &runtime.Meta{ID: "old", Workspace: ws, Title: "old one", Mode: runtime.ModeAuto, CreatedAt: older, UpdatedAt: older},
		logOf(t, user("old one"), say("a"))...)
	writeSession(t, ws, "new", &runtime.Meta{ID: "new", Workspace: ws, Mode: runtime.ModeReadOnly, CreatedAt: older, UpdatedAt: older.Add(time.Hour)},
		logOf(t, user("new one"), say("a"), user("two"), say("b"))...)
	// A Subagent's session is its parent's business.
	writeSession(t, ws, "kid", &runtime.Meta{ID: "kid", Workspace: ws, ParentID: "new", Depth: 1})
	for _, id := range []string{"old", "new"} {
		// Logs written now are newer than the metadata: keep the times fixed.
		require.NoError(t, os.Chtimes(filepath.Join(runtime.SessionsDir(ws), id+".ndjson"), older, older))
	}

	list, err := List(ws)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "new", list[0].ID)
	require.Equal(t, 2, list[0].Turns)
	require.Equal(t, "new one", list[0].Title, "a missing title is the first prompt")
	require.Equal(t, filepath.Join(runtime.SessionsDir(ws), "new.ndjson"), list[0].Log)
	require.Equal(t, "old", list[1].ID)
	require.Equal(t, 1, list[1].Turns)

	b, err := json.Marshal(list[0])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, key := range []string{"session_id", "workspace", "title", "mode", "model", "created_at", "updated_at", "turns", "log"} {
		require.Contains(t, m, key)
	}

	empty, err := List(t.TempDir())
	require.NoError(t, err)
	require.Empty(t, empty)
	require.NotNil(t, empty, "--json prints [] for no sessions")
}

// TestInspectListCountsOnlyWhatTheMetadataHasNotCounted: the list read
// every Log whole to count its turns (3,001 Logs of 4 MB: 97–137 s,
// qa32s). The metadata says how many turns the Log's first bytes hold, so
// only the lines after them are read: here the first turn's line no
// longer says user_message and is still counted, as the metadata says.
// A count the Log cannot be the one of (shorter, or not a line's end
// there) is ignored and the Log counted whole, as one without a count
// (older versions).
func TestInspectListCountsOnlyWhatTheMetadataHasNotCounted(t *testing.T) {
	ws := workspace(t)
	path := filepath.Join(runtime.SessionsDir(ws), "s.ndjson")
	log, err := runtime.CreateLog(path)
	require.NoError(t, err)
	events := logOf(t, user("one"), say("a"), user("two"), say("b"))
	for i := range events {
		e := events[i]
		e.Seq, e.SessionID = 0, "s"
		require.NoError(t, log.Append(&e))
		if i == 1 {
			counted := log.Count()
			require.Equal(t, 1, counted.UserMessages)
			meta := runtime.Meta{ID: "s", Workspace: ws, Title: "t", Count: &counted}
			b, err := json.Marshal(meta)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(runtime.SessionsDir(ws), "s.json"), b, 0o644))
		}
	}
	require.NoError(t, log.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	first := bytes.Index(b, []byte(`"type":"user_message"`))
	require.Positive(t, first)
	copy(b[first:], `"type":"user_massage"`)
	require.NoError(t, os.WriteFile(path, b, 0o644))

	turns := func() int {
		t.Helper()
		list, err := List(ws)
		require.NoError(t, err)
		require.Len(t, list, 1)
		out, err := json.Marshal(list[0])
		require.NoError(t, err)
		require.NotContains(t, string(out), "log_count", "how the list counted is not what it lists")
		return list[0].Turns
	}
	require.Equal(t, 2, turns(), "the first turn is the metadata's, the second read from the Log")

	metaPath := filepath.Join(runtime.SessionsDir(ws), "s.json")
	for _, c := range []runtime.LogCount{
		{Bytes: int64(len(b)) + 10, UserMessages: 1}, // past the Log's end
		{Bytes: int64(first), UserMessages: 1},       // not where a line ends
	} {
		meta := runtime.Meta{ID: "s", Workspace: ws, Title: "t", Count: &c}
		mb, err := json.Marshal(meta)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(metaPath, mb, 0o644))
		require.Equal(t, 1, turns(), "%+v: counted whole, the changed line is no turn", c)
	}
}
