package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pixir gc removes the session Logs and Subagent folders nothing wrote to
// for the given age, after a dry run that removes nothing, and says what
// it freed; what is younger stays.
func TestGCRemovesWhatIsOldAndSaysWhatItFreed(t *testing.T) {
	e := newRunEnv(t)
	state := filepath.Join(e.ws, ".pixir")
	old := time.Now().Add(-10 * 24 * time.Hour)
	put := func(rel, content string, mtime time.Time) {
		p := filepath.Join(state, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
	}
	put("sessions/old.ndjson", "0123456789", old)
	put("sessions/new.ndjson", "01234", time.Now())
	put("subagents/sa-old/child.ndjson", "0123", old)
	put("subagents/sa-old/workspace/src/a.go", "package a\n", old)
	put("subagents/sa-old/base/manifest.json", "{}", old)
	require.NoError(t, os.Chmod(filepath.Join(state, "subagents", "sa-old", "workspace", "src"), 0o555)) // a child's read-only folder
	for _, d := range []string{"subagents/sa-old/workspace/src", "subagents/sa-old/workspace", "subagents/sa-old/base", "subagents/sa-old"} {
		require.NoError(t, os.Chtimes(filepath.Join(state, d), old, old))
	}
	put("subagents/sa-new/child.ndjson", "x", time.Now())

	// What it frees is the room on disk, as du counts it: a 10-byte file
	// takes a block, and so does every folder.
	logBytes, childBytes := diskUsage(t, filepath.Join(state, "sessions", "old.ndjson")), diskUsage(t, filepath.Join(state, "subagents", "sa-old"))
	stdout, stderr, code := e.pixir("gc", "--dry-run")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "would remove .pixir/sessions/old.ndjson (session_log, "+bytesText(logBytes)+",")
	require.Contains(t, stdout, "would remove .pixir/subagents/sa-old (subagent, "+bytesText(childBytes)+",")
	require.Contains(t, stdout, "Would remove 2 items, "+bytesText(logBytes+childBytes)+"; kept 2 written in the last 7d.")
	require.FileExists(t, filepath.Join(state, "sessions", "old.ndjson"), "a dry run removes nothing")

	stdout, stderr, code = e.pixir("gc", "--json")
	require.Equal(t, exitOK, code, stderr)
	var rep struct {
		Removed []struct{ Kind, Path string } `json:"removed"`
		Freed   int64                         `json:"freed_bytes"`
		Kept    int                           `json:"kept"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Equal(t, logBytes+childBytes, rep.Freed)
	require.Equal(t, 2, rep.Kept)
	require.Len(t, rep.Removed, 2)
	require.NoFileExists(t, filepath.Join(state, "sessions", "old.ndjson"))
	require.NoDirExists(t, filepath.Join(state, "subagents", "sa-old"))
	require.FileExists(t, filepath.Join(state, "sessions", "new.ndjson"))
	require.FileExists(t, filepath.Join(state, "subagents", "sa-new", "child.ndjson"))

	_, stderr, code = e.pixir("gc", "--older-than", "soon")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `"soon" is not an age: write 7d, 36h or 90m`)
}

// A session is its Log and its metadata (<id>.json): pixir gc removes
// both, and counts both. It removed the Log alone, and the metadata of
// every collected session stayed in .pixir/sessions for good (nothing
// collected it later either); such a leftover goes once it is old.
func TestGCRemovesASessionsMetadataWithItsLog(t *testing.T) {
	e := newRunEnv(t)
	_, stderr, code := e.pixir("run", "hello")
	require.Equal(t, exitOK, code, stderr)
	sid := sessionOf(t, e.ws, stderr)
	dir := filepath.Join(e.ws, ".pixir", "sessions")
	old := time.Now().Add(-10 * 24 * time.Hour)
	var size int64
	for _, name := range []string{sid + ".ndjson", sid + ".json"} {
		_, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, "a run leaves its Log and its metadata")
		size += diskUsage(t, filepath.Join(dir, name))
		require.NoError(t, os.Chtimes(filepath.Join(dir, name), old, old))
	}
	leftover := filepath.Join(dir, "0badc0de-0000-7000-8000-000000000000.json")
	require.NoError(t, os.WriteFile(leftover, []byte("{}"), 0o644))
	require.NoError(t, os.Chtimes(leftover, old, old))
	size += diskUsage(t, leftover)

	stdout, stderr, code := e.pixir("gc", "--json")
	require.Equal(t, exitOK, code, stderr)
	var rep struct {
		Removed []struct{ Kind, Path string } `json:"removed"`
		Freed   int64                         `json:"freed_bytes"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Len(t, rep.Removed, 2, stdout)
	require.Equal(t, size, rep.Freed, "the Log, its metadata and the leftover")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing of the session is left")
}

// A session an editor has open writes its Log only when something
// happens: one idle for longer than the age is still in use. pixir gc
// removed its Log, and its next turn went to the removed file: the session
// could not be loaded any more, that turn lost (found by qa30p). It is
// kept, and counted apart, while its process has it open; once that ends,
// the age decides again. So do the Subagent folders its Log names: its
// children are its own to go on with, however long ago they ran.
func TestGCKeepsAnIdleSessionAProcessHasOpen(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "delegate")) // a child, in a snapshot of its own
	require.Equal(t, "end_turn", stopReason(t, m))
	dir := filepath.Join(e.ws, ".pixir", "sessions")
	children, err := filepath.Glob(filepath.Join(e.ws, ".pixir", "subagents", "sa-*"))
	require.NoError(t, err)
	require.Len(t, children, 1)
	backdate := func() {
		old := time.Now().Add(-10 * 24 * time.Hour)
		for _, name := range []string{sid + ".ndjson", sid + ".json"} {
			require.NoError(t, os.Chtimes(filepath.Join(dir, name), old, old))
		}
		require.NoError(t, filepath.WalkDir(children[0], func(p string, _ os.DirEntry, err error) error {
			require.NoError(t, err)
			return os.Chtimes(p, old, old)
		}))
	}
	backdate() // the editor sat idle for ten days
	r := &runEnv{t: t, home: e.home, ws: e.ws}
	stdout, stderr, code := r.pixir("gc", "--dry-run")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Would remove 0 items, 0 B; kept 0 written in the last 7d, and 2 older items of sessions running processes have open.")
	stdout, stderr, code = r.pixir("gc", "--json")
	require.Equal(t, exitOK, code, stderr)
	var rep struct {
		Removed []struct{ Path string } `json:"removed"`
		InUse   int                     `json:"in_use"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Empty(t, rep.Removed, stdout)
	require.Equal(t, 2, rep.InUse, "its Log and its child's folder")
	require.FileExists(t, filepath.Join(dir, sid+".ndjson"))
	require.DirExists(t, children[0])

	m, _ = a.call(3, "session/prompt", promptParams(sid, "hello again"))
	require.Equal(t, "end_turn", stopReason(t, m))
	a.exit()
	b := e.start()
	b.initialize()
	m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	var prompts []string
	for _, u := range ofKind(updates(t, replay), "user_message_chunk") {
		prompts = append(prompts, u["content"].(map[string]any)["text"].(string))
	}
	require.Equal(t, []string{"delegate", "hello again"}, prompts, "the turn after the gc is in the Log")
	b.exit()

	backdate() // no process has it open now: the age decides
	stdout, stderr, code = r.pixir("gc", "--json")
	require.Equal(t, exitOK, code, stderr)
	rep.Removed, rep.InUse = nil, 0
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Len(t, rep.Removed, 2, stdout)
	require.Zero(t, rep.InUse)
	require.NoFileExists(t, filepath.Join(dir, sid+".ndjson"))
	require.NoDirExists(t, children[0])
}
