//go:build unix

package cleanup

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tree writes a workspace's .pixir/ with files ten days old: a session
// whose Log names a shared child, whose Log names a grandchild (in the
// same workspace's subagents/), whose Log names the child again (a cycle
// must end), and a young session naming nobody.
func tree(t *testing.T) (root, state string, old time.Time) {
	t.Helper()
	root = t.TempDir()
	state = filepath.Join(root, ".pixir")
	old = time.Now().Add(-10 * 24 * time.Hour)
	event := func(id string) string {
		return `{"seq":1,"type":"subagent_event","data":{"subagent_id":"` + id + `","kind":"spawned"}}` + "\n"
	}
	put := func(rel, content string, mtime time.Time) {
		p := filepath.Join(state, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
	}
	put("sessions/top.ndjson", `{"seq":0,"type":"session_started"}`+"\n"+event("sa-child"), old)
	put("sessions/young.ndjson", `{"seq":0,"type":"session_started"}`+"\n", time.Now())
	put("subagents/sa-child/c1.ndjson", event("sa-grand"), old)
	put("subagents/sa-grand/g1.ndjson", event("sa-child")+event("sa-gone"), old)
	for _, d := range []string{"subagents/sa-child", "subagents/sa-grand"} {
		require.NoError(t, os.Chtimes(filepath.Join(state, d), old, old))
	}
	return root, state, old
}

// hold opens a session the way runtime does (an exclusive flock on its
// Log) until the test ends.
func hold(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
}

// An open session's grandchildren are its own too: a shared child's
// children write their subagent_events to the child's Log (beside its
// folder), which is not locked between the child's runs. gc read only
// the session's Log and removed the old grandchild's folder.
func TestCollectKeepsTheGrandchildrenOfAnOpenSession(t *testing.T) {
	root, state, _ := tree(t)
	hold(t, filepath.Join(state, "sessions", "top.ndjson"))

	rep, err := Collect(root, 7*24*time.Hour, time.Now(), false)
	require.NoError(t, err)
	require.Empty(t, rep.Removed)
	require.Equal(t, 3, rep.InUse, "the Log, its child and its grandchild")
	require.DirExists(t, filepath.Join(state, "subagents", "sa-grand"))
	require.DirExists(t, filepath.Join(state, "subagents", "sa-child"))
}

// gc takes a Log's lock only when what it may remove depends on it: a
// young Log naming no old Subagent is never tried, so a session/load or
// pixir resume racing the gc does not find it locked by gc. Every Log gc
// tried, it released.
func TestCollectTriesOnlyLogsWhatItRemovesDependsOn(t *testing.T) {
	root, state, _ := tree(t)
	var tried []string
	lockLog = func(p string) (func(), bool) {
		tried = append(tried, filepath.Base(p))
		return lockIdle(p)
	}
	t.Cleanup(func() { lockLog = lockIdle })

	rep, err := Collect(root, 7*24*time.Hour, time.Now(), true)
	require.NoError(t, err)
	require.Len(t, rep.Removed, 3, "no process has the old session open: it goes, with its descendants")
	require.Equal(t, []string{"top.ndjson"}, tried, "the young Log names no old Subagent")

	// A young session naming the old child may be open: tried, and
	// when it is, its descendants stay.
	young := filepath.Join(state, "sessions", "young.ndjson")
	f, err := os.OpenFile(young, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":1,"type":"subagent_event","data":{"subagent_id":"sa-child","kind":"spawned"}}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	hold(t, young)
	tried = nil
	rep, err = Collect(root, 7*24*time.Hour, time.Now(), false)
	require.NoError(t, err)
	require.Equal(t, []string{"top.ndjson", "young.ndjson", "top.ndjson"}, tried)
	require.Equal(t, 2, rep.InUse, "the young session's child and grandchild")
	require.Len(t, rep.Removed, 1, "the old session no process has open")
	require.NoFileExists(t, filepath.Join(state, "sessions", "top.ndjson"))
	require.DirExists(t, filepath.Join(state, "subagents", "sa-grand"))
}

// A session opened after gc found it idle and before gc removed its
// children (a session/load, a pixir resume) keeps them: each Subagent
// folder is removed while gc holds the lock of every session Log that
// names it, and a Log a process took meanwhile keeps the folder. gc
// checked the locks first and removed the folders later, without them:
// the session's Log stayed (its removal tries the lock again) and its
// children's folders went, snapshots with unmerged work included.
func TestCollectKeepsTheChildrenOfASessionOpenedDuringIt(t *testing.T) {
	for _, young := range []bool{false, true} {
		name := "an old session"
		if young {
			name = "a young session"
		}
		t.Run(name, func(t *testing.T) {
			root, state, _ := tree(t)
			top := filepath.Join(state, "sessions", "top.ndjson")
			if young {
				now := time.Now()
				require.NoError(t, os.Chtimes(top, now, now))
			}
			opened := false
			lockLog = func(p string) (func(), bool) {
				release, idle := lockIdle(p)
				if filepath.Base(p) == "top.ndjson" && !opened && idle {
					// Found idle: a process opens the session as soon as
					// gc lets go of it.
					opened = true
					return func() { release(); hold(t, top) }, true
				}
				return release, idle
			}
			t.Cleanup(func() { lockLog = lockIdle })

			rep, err := Collect(root, 7*24*time.Hour, time.Now(), false)
			require.NoError(t, err)
			require.True(t, opened)
			require.FileExists(t, top)
			require.DirExists(t, filepath.Join(state, "subagents", "sa-child"), "%+v", rep)
			require.DirExists(t, filepath.Join(state, "subagents", "sa-grand"))
			require.Empty(t, rep.Removed)
			want := 2 // its child and grandchild
			if !young {
				want = 3 // and its Log
			}
			require.Equal(t, want, rep.InUse)
		})
	}
}

// diskUsage is what du counts of p: the blocks of every entry beneath it,
// folders included.
func diskUsage(t *testing.T, p string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	}))
	return n
}

// What gc says it frees is the disk space it gives back. A snapshot is
// thousands of small files, each taking a block or more: gc counted their
// lengths, and said 48.5 MiB for folders du counted 667 MiB of (a
// workflow's 50 snapshots of a 3,000-file tree).
func TestCollectCountsTheDiskSpaceItFrees(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, ".pixir")
	old := time.Now().Add(-10 * 24 * time.Hour)
	child := filepath.Join(state, "subagents", "sa-old")
	for i := range 200 {
		p := filepath.Join(child, "workspace", "src", "p"+string(rune('a'+i%20)), "f"+string(rune('a'+i/20))+".go")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("package p\n"), 0o644))
	}
	log := filepath.Join(state, "sessions", "old.ndjson")
	require.NoError(t, os.MkdirAll(filepath.Dir(log), 0o755))
	require.NoError(t, os.WriteFile(log, []byte(`{"seq":0}`+"\n"), 0o644))
	require.NoError(t, filepath.Walk(state, func(p string, _ os.FileInfo, err error) error {
		require.NoError(t, err)
		return os.Chtimes(p, old, old)
	}))
	want := map[string]int64{".pixir/subagents/sa-old": diskUsage(t, child), ".pixir/sessions/old.ndjson": diskUsage(t, log)}
	require.Greater(t, want[".pixir/subagents/sa-old"], int64(200*len("package p\n")), "small files take more room than their length")

	rep, err := Collect(root, 7*24*time.Hour, time.Now(), true)
	require.NoError(t, err)
	got := map[string]int64{}
	for _, it := range rep.Removed {
		got[it.Path] = it.Bytes
	}
	require.Equal(t, want, got)
	require.Equal(t, want[".pixir/subagents/sa-old"]+want[".pixir/sessions/old.ndjson"], rep.Freed)

	rep, err = Collect(root, 7*24*time.Hour, time.Now(), false)
	require.NoError(t, err)
	require.Equal(t, want[".pixir/subagents/sa-old"]+want[".pixir/sessions/old.ndjson"], rep.Freed)
	require.NoDirExists(t, child)
}
