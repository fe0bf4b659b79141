package runtime

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/snapshot"
	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

func globMatcher(patterns ...string) func(string) bool {
	return func(rel string) bool {
		for _, p := range patterns {
			if ok, _ := doublestar.Match(p, rel); ok {
				return true
			}
		}
		return false
	}
}

func TestWriteLimit(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src", "pkg"), 0o755))
	j := func(p ...string) string { return filepath.Join(append([]string{ws}, p...)...) }

	none := writeLimit{}
	require.False(t, none.limits())
	require.True(t, none.allows("anything/at/all"))
	require.Nil(t, none.roots(ws), "nothing limited: commands may write the whole workspace")

	step := writeLimit{step: []string{"src/**"}, stepMay: globMatcher("src/**")}
	require.True(t, step.allows("src/a.go"))
	require.False(t, step.allows("docs/a.md"))
	require.Equal(t, "src/**", step.String())
	require.Equal(t, []string{j("src")}, step.roots(ws))

	both := writeLimit{step: []string{"src/**"}, stepMay: globMatcher("src/**"), agent: []string{"**/*_test.go"}, agentName: "test"}
	require.True(t, both.allows("src/a_test.go"))
	require.False(t, both.allows("src/a.go"), "the agent's write set narrows the step's")
	require.False(t, both.allows("x_test.go"), "and the step's the agent's")
	require.Equal(t, [][]string{{"src/**"}, {"**/*_test.go"}}, both.sets())
	require.Equal(t, "the step's write_set src/** and agent test's write_set **/*_test.go", both.String())
	require.Equal(t, []string{j("src")}, both.roots(ws), "the deeper of nested roots")

	agent := writeLimit{agent: []string{"TODO/**"}, agentName: "pm"}
	require.True(t, agent.allows("TODO/GAL-1.md"))
	require.False(t, agent.allows("src/a.go"))
	require.Equal(t, "agent pm's write_set", agent.whose())

	apart := writeLimit{step: []string{"docs/**"}, agent: []string{"src/pkg/**"}}
	require.Equal(t, []string{}, apart.roots(ws), "write sets with nothing in common leave commands nowhere to write")
}

func TestChangesSince(t *testing.T) {
	ws := t.TempDir()
	write := func(rel, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644))
	}
	write("a.txt", "a")
	write("same-size.txt", "1234")
	write("gone.txt", "g")
	write(".git/HEAD", "ref")
	write(".pixir/sessions/s.ndjson", "{}")
	write("node_modules/x/index.js", "x")
	write("hidden/h.txt", "h")
	before, err := scanTree(context.Background(), ws, []string{ws})
	require.NoError(t, err)
	require.Len(t, before, 5, "the workspace's .git and .pixir are left out; installed dependencies are not")
	require.Contains(t, before, "node_modules/x/index.js")

	write("a.txt", "a, longer")
	// Same size, and the modification time set back: the status-change
	// time still tells.
	info, err := os.Stat(filepath.Join(ws, "same-size.txt"))
	require.NoError(t, err)
	write("same-size.txt", "5678")
	require.NoError(t, os.Chtimes(filepath.Join(ws, "same-size.txt"), info.ModTime(), info.ModTime()))
	require.NoError(t, os.Remove(filepath.Join(ws, "gone.txt")))
	write("new/b.txt", "b")
	write(".git/HEAD", "changed")
	require.NoError(t, os.Symlink("a.txt", filepath.Join(ws, "link")))
	write(".pixir/sessions/s.ndjson", "{}{}")
	// A folder made unreadable hides what is beneath it, so it stands
	// for it (root reads it all the same).
	unreadable := os.Geteuid() != 0
	if unreadable {
		require.NoError(t, os.Chmod(filepath.Join(ws, "hidden"), 0))
		t.Cleanup(func() { _ = os.Chmod(filepath.Join(ws, "hidden"), 0o755) })
	}

	after, err := scanTree(context.Background(), ws, []string{ws, filepath.Join(ws, "missing")})
	require.NoError(t, err)
	ch := changesSince(before, after)
	require.Equal(t, []string{"a.txt", "same-size.txt"}, ch.Changed)
	if unreadable {
		require.Equal(t, []string{"hidden", "link", "new/b.txt"}, ch.Added)
		require.Equal(t, []string{"gone.txt", "hidden/h.txt"}, ch.Deleted)
	} else {
		require.Equal(t, []string{"link", "new/b.txt"}, ch.Added)
		require.Equal(t, []string{"gone.txt"}, ch.Deleted)
	}
	require.Equal(t, tools.FileChanges{Added: []string{}, Changed: []string{}, Deleted: []string{}}, changesSince(after, after))
}

// landlockOff is a sandbox that confines nothing, as on a kernel without
// Landlock.
func landlockOff() *sandbox.Sandbox {
	off := false
	return sandbox.New(sandbox.Config{Landlock: &off})
}

func needLandlock(t *testing.T) {
	t.Helper()
	if sup := (*sandbox.Sandbox)(nil).Support(); !sup.Landlock {
		t.Skip("no Landlock here:", sup.LandlockProblem)
	}
}

// A writer's changes are compared with its write set after the fact: a
// command that wrote outside it (where Landlock, which allows folders,
// could not stop it, or where there is no Landlock) fails the step with
// write_set_violation and the paths.
func TestWritesOutsideTheWriteSetFailTheStep(t *testing.T) {
	tests := []struct {
		name      string
		landlock  bool
		mode      string
		command   string
		violation []string
	}{
		// docs/*.md: Landlock allows docs/, the check holds the rest.
		{"isolated, in-kernel", true, WorkspaceIsolated, "mkdir -p docs/sub && echo x > docs/sub/deep.txt; echo y > docs/a.md", []string{"docs/sub/deep.txt"}},
		{"shared, in-kernel", true, WorkspaceShared, "mkdir -p docs/sub && echo x > docs/sub/deep.txt; echo y > docs/a.md", []string{"docs/sub/deep.txt"}},
		{"isolated, no kernel sandbox", false, WorkspaceIsolated, "mkdir -p src && echo x > src/x; echo y > docs/a.md", []string{"src/x"}},
		{"shared, no kernel sandbox", false, WorkspaceShared, "mkdir -p src && echo x > src/x; echo y > docs/a.md", []string{"src/x"}},
		{"within the write set: no violation", false, WorkspaceShared, "echo y > docs/a.md", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sbx *sandbox.Sandbox
			if tt.landlock {
				needLandlock(t)
			} else {
				sbx = landlockOff()
			}
			f := newManagerFixtureSandboxed(t, SubagentConfig{}, childProvider{}, sbx)
			root := f.parent.workspace.Root()
			require.NoError(t, os.MkdirAll(filepath.Join(root, "docs"), 0o755))
			st := newSteps(f)
			v := st.start(t, workflows.StepRequest{Name: "docs", Task: "bash " + tt.command, WorkspaceMode: tt.mode,
				WriteSet: []string{"docs/*.md"}, MayWrite: globMatcher("docs/*.md")})
			got := st.await(t, v.ID)
			require.NotNil(t, got.Changes, "a writer's changes are listed, shared or isolated")
			require.Contains(t, got.Changes.Added, "docs/a.md")
			if tt.violation == nil {
				require.Equal(t, tools.SubagentCompleted, got.Status, "%+v", got.Error)
				require.Nil(t, got.WriteSetViolation)
				return
			}
			require.Equal(t, tools.SubagentFailed, got.Status)
			require.Equal(t, &tools.WriteSetViolation{Code: "write_set_violation", WriteSets: [][]string{{"docs/*.md"}}, Paths: tt.violation, Workspace: tt.mode},
				got.WriteSetViolation)
			require.Equal(t, tools.ErrPermissionDenied, got.Error.Kind)
			require.True(t, strings.HasPrefix(got.Error.Message, "write_set_violation: the child changed "+tt.violation[0]+", outside docs/*.md"), got.Error.Message)
			_, err := os.Stat(filepath.Join(root, tt.violation[0]))
			if tt.mode == WorkspaceIsolated {
				require.True(t, os.IsNotExist(err), "an isolated step's workspace is untouched")
				require.Contains(t, got.Error.Message, "never merged")
				require.FileExists(t, filepath.Join(got.Workspace, tt.violation[0]), "it stays in the snapshot, as evidence")
			} else {
				require.NoError(t, err, "a shared step's changes are reported, not reverted")
				require.Contains(t, got.Error.Message, "not reverted")
			}
		})
	}
}

// In a shared workspace, a change another writer may make while the step
// runs is that writer's, not a violation.
func TestSharedWritersDoNotBlameEachOther(t *testing.T) {
	f := newManagerFixtureSandboxed(t, SubagentConfig{}, childProvider{}, landlockOff())
	root := f.parent.workspace.Root()
	gate := filepath.Join(t.TempDir(), "gate")
	require.NoError(t, syscall.Mkfifo(gate, 0o600))
	st := newSteps(f)
	// a waits on the gate while b writes its own file beside a's.
	a := st.start(t, workflows.StepRequest{Name: "a", Task: "bash cat " + gate + " && echo a > a.md", WorkspaceMode: WorkspaceShared,
		WriteSet: []string{"*.md"}, MayWrite: globMatcher("*.md")})
	// Opening the gate for writing returns once a holds it open for
	// reading: a's command runs, so what a's run started from is recorded
	// before b writes (b started at once could write before it, and b.txt
	// was then not among a's changes: 2 runs in 30 at a load of 12).
	w, err := os.OpenFile(gate, os.O_WRONLY, 0)
	require.NoError(t, err)
	b := st.start(t, workflows.StepRequest{Name: "b", Task: "bash echo b > b.txt", WorkspaceMode: WorkspaceShared,
		WriteSet: []string{"*.txt"}, MayWrite: globMatcher("*.txt")})
	bv := st.await(t, b.ID)
	require.Equal(t, tools.SubagentCompleted, bv.Status, "%+v", bv.Error)
	require.NoError(t, w.Close()) // a goes on
	av := st.await(t, a.ID)
	require.Equal(t, tools.SubagentCompleted, av.Status, "%+v", av.Error)
	require.Nil(t, av.WriteSetViolation)
	require.Equal(t, []string{"a.md", "b.txt"}, av.Changes.Added, "the change list of a shared workspace holds what others did too")
	require.FileExists(t, filepath.Join(root, "b.txt"))

	// Alone, the same write outside its set is a violation.
	c := st.start(t, workflows.StepRequest{Name: "c", Task: "bash echo c > c.txt", WorkspaceMode: WorkspaceShared,
		WriteSet: []string{"*.md"}, MayWrite: globMatcher("*.md")})
	cv := st.await(t, c.ID)
	require.Equal(t, tools.SubagentFailed, cv.Status)
	require.Equal(t, []string{"c.txt"}, cv.WriteSetViolation.Paths)
}

func TestAWriteSetOfEverythingLimitsNothing(t *testing.T) {
	require.False(t, newWriteLimit([]string{"**/*"}, globMatcher("**/*"), AgentSpec{}).limits(), "a writer step's default")
	pm := newWriteLimit([]string{"**/*"}, globMatcher("**/*"), AgentSpec{Name: "pm", Profile: AgentProfile{WriteSet: []string{"TODO/**"}}})
	require.Equal(t, writeLimit{agent: []string{"TODO/**"}, agentName: "pm"}, pm)
	require.Equal(t, "agent pm's write_set", pm.whose())
	require.False(t, newWriteLimit(nil, nil, AgentSpec{Profile: AgentProfile{WriteSet: []string{"**"}}}).limits())
}

// BenchmarkSharedChangeList measures what finding a shared writer's
// changes costs per run: stamping what its writes can reach before and
// after, and comparing. The reach is the roots of its write set where
// Landlock holds its commands (docs/** → docs/, 10 files here), or the
// whole workspace where it cannot, or where the pattern opens it all
// (**/*_test.go). The yardstick, in the same iteration, is what an
// isolated writer pays before it starts: a snapshot of the workspace (for
// the 286 files of the repository of issue 15; for 5,000 files only the
// stamps, a snapshot there takes seconds). Files of 4 KiB. Wall and CPU
// time (Pixir's own, user and system) per run. The third tree is the 286
// files beside an installed node_modules of 10,000 files (1,429 packages
// of 7 files, a lib/ folder in each), which the stamping looks into since
// it must see a write hidden there; snapshots leave it out.
func BenchmarkSharedChangeList(b *testing.B) {
	for _, files := range []int{286, 5000, -286} {
		ws := b.TempDir()
		body := strings.Repeat("x", 4<<10)
		name := fmt.Sprintf("%d-files", files)
		if files < 0 {
			files = -files
			name = fmt.Sprintf("%d-files+node_modules-10000", files)
			for i := range 10000 {
				pkg := filepath.Join(ws, "node_modules", fmt.Sprintf("p%04d", i/7))
				file := filepath.Join(pkg, []string{"package.json", "README.md", "index.js"}[min(i%7, 2)])
				if i%7 > 2 {
					file = filepath.Join(pkg, "lib", fmt.Sprintf("m%d.js", i%7))
				}
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		for i := range files {
			dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", i%50))
			if i < 10 {
				dir = filepath.Join(ws, "docs")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.go", i)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			type cost struct{ wall, cpu time.Duration }
			var root, whole, snap, repos cost
			measure := func(c *cost, f func()) {
				cpu0, start := cpuTime(), time.Now()
				f()
				c.wall += time.Since(start)
				c.cpu += cpuTime() - cpu0
			}
			changeList := func(roots ...string) func() {
				return func() {
					before, err := scanTree(ctx, ws, roots)
					if err != nil {
						b.Fatal(err)
					}
					after, err := scanTree(ctx, ws, roots)
					if err != nil {
						b.Fatal(err)
					}
					if ch := changesSince(before, after); len(ch.Added)+len(ch.Changed)+len(ch.Deleted) != 0 {
						b.Fatalf("changes in an untouched tree: %+v", ch)
					}
				}
			}
			for b.Loop() {
				measure(&root, changeList(filepath.Join(ws, "docs")))
				measure(&whole, changeList(ws))
				// Every writer's look for a git repository it made, before
				// and after its run, whatever its write set.
				measure(&repos, func() {
					for range 2 {
						if r, err := nestedRepos(ctx, ws); err != nil || len(r) != 0 {
							b.Fatal(r, err)
						}
					}
				})
				if files > 1000 {
					continue
				}
				dst := filepath.Join(b.TempDir(), "snap")
				measure(&snap, func() {
					if _, err := snapshot.Take(ctx, ws, dst); err != nil {
						b.Fatal(err)
					}
				})
				if err := snapshot.Remove(dst); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
			b.ReportMetric(ms(root.wall), "docs-root-ms")
			b.ReportMetric(ms(whole.wall), "workspace-ms")
			b.ReportMetric(ms(whole.cpu), "workspace-cpu-ms")
			b.ReportMetric(ms(repos.wall), "nested-repos-ms")
			b.ReportMetric(ms(repos.cpu), "nested-repos-cpu-ms")
			if files <= 1000 {
				b.ReportMetric(ms(snap.wall), "snapshot-ms")
				b.ReportMetric(ms(snap.cpu), "snapshot-cpu-ms")
			}
		})
	}
}

// A follow-up run (send_input) of a shared child does not hide what an
// earlier run wrote outside its write set: it is still in the workspace.
func TestASharedChildsViolationOutlivesItsRun(t *testing.T) {
	f := newManagerFixtureSandboxed(t, SubagentConfig{Agents: profileAgents}, childProvider{}, landlockOff())
	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Agent: "notes", Task: "bash echo x > out.txt", WorkspaceMode: WorkspaceShared})
	require.NoError(t, err)
	first := f.wait(t, v.ID).Agents[0]
	require.Equal(t, tools.SubagentFailed, first.Status)
	require.Equal(t, []string{"out.txt"}, first.WriteSetViolation.Paths)

	_, err = f.b.SendInput(context.Background(), v.ID, "write notes/a.md")
	require.NoError(t, err)
	second := f.wait(t, v.ID).Agents[0]
	require.Equal(t, tools.SubagentCompleted, second.Status, "%+v", second.Error)
	require.Equal(t, []string{"notes/a.md"}, second.Changes.Added, "a shared child's change list is its last run's")
	require.Equal(t, []string{"out.txt"}, second.WriteSetViolation.Paths)

	require.Nil(t, laterViolation(&tools.WriteSetViolation{Workspace: WorkspaceIsolated, Paths: []string{"a"}}, nil),
		"an isolated child's change list covers every run: an undone escape is gone")
	require.Equal(t, []string{"a", "b"}, laterViolation(&tools.WriteSetViolation{Workspace: WorkspaceShared, Paths: []string{"b", "a"}},
		&tools.WriteSetViolation{Workspace: WorkspaceShared, Paths: []string{"a"}}).Paths)
}

// A shared writer whose commands may write the whole workspace (a
// **/*_test.go write set opens it all to Landlock; without Landlock they
// may write anything) cannot hide a write outside its set in a folder
// snapshots leave out: one it names node_modules, .venv or .git, or marks
// with a CACHEDIR.TAG. Only the workspace's own .git and .pixir, which
// Landlock keeps from its commands, are not looked at.
func TestASharedWritersWritesAreSeenInFoldersSnapshotsLeaveOut(t *testing.T) {
	// Beneath src/: under Landlock a command cannot make a new folder at the
	// top of the workspace, which holds .git.
	const command = "cd src && mkdir -p cache node_modules/x .venv/bin .git .pixir && " +
		"printf 'Signature: 8a477f597d28d172789f06886806bc55\\n' > cache/CACHEDIR.TAG && echo x > cache/hidden && " +
		"echo x > node_modules/x/index.js && echo x > .venv/bin/activate && echo x > .git/config && echo x > .pixir/x && " +
		"echo x > a_test.go"
	want := []string{"src/.git/config", "src/.pixir/x", "src/.venv/bin/activate", "src/cache/CACHEDIR.TAG", "src/cache/hidden", "src/node_modules/x/index.js"}
	for _, landlock := range []bool{true, false} {
		t.Run(fmt.Sprintf("landlock=%v", landlock), func(t *testing.T) {
			sbx := landlockOff()
			if landlock {
				needLandlock(t)
				sbx = nil
			}
			f := newManagerFixtureSandboxed(t, SubagentConfig{}, childProvider{}, sbx)
			require.NoError(t, os.MkdirAll(filepath.Join(f.parent.workspace.Root(), "src"), 0o755))
			st := newSteps(f)
			v := st.start(t, workflows.StepRequest{Name: "tests", Task: "bash " + command, WorkspaceMode: WorkspaceShared,
				WriteSet: []string{"**/*_test.go"}, MayWrite: globMatcher("**/*_test.go")})
			got := st.await(t, v.ID)
			require.Equal(t, tools.SubagentFailed, got.Status)
			require.NotNil(t, got.WriteSetViolation, "%+v", got.Error)
			require.Equal(t, want, got.WriteSetViolation.Paths)
			require.Contains(t, got.Changes.Added, "src/a_test.go")
		})
	}
}

// Landlock cannot stop a command changing a file's mode or times (no right
// governs chmod or utime), so what the check after the fact sees of them
// is what README promises: such a change beneath what a shared writer's
// check stamps (its write set's folders under Landlock, the whole
// workspace without) is a change outside its write set; elsewhere nothing
// sees it.
func TestAModeOrTimeChangeIsSeenWhereTheCheckLooks(t *testing.T) {
	const command = "chmod 600 docs/sub/x.txt; touch -d 2000-01-01 docs/old.txt; chmod 600 README.md; echo y > docs/a.md"
	for _, tt := range []struct {
		landlock bool
		want     []string
	}{
		{true, []string{"docs/old.txt", "docs/sub/x.txt"}},
		{false, []string{"README.md", "docs/old.txt", "docs/sub/x.txt"}},
	} {
		t.Run(fmt.Sprintf("landlock=%v", tt.landlock), func(t *testing.T) {
			sbx := landlockOff()
			if tt.landlock {
				needLandlock(t)
				sbx = nil
			}
			f := newManagerFixtureSandboxed(t, SubagentConfig{}, childProvider{}, sbx)
			root := f.parent.workspace.Root()
			for _, p := range []string{"docs/sub/x.txt", "docs/old.txt", "README.md"} {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte("x\n"), 0o644))
			}
			st := newSteps(f)
			v := st.start(t, workflows.StepRequest{Name: "docs", Task: "bash " + command, WorkspaceMode: WorkspaceShared,
				WriteSet: []string{"docs/*.md"}, MayWrite: globMatcher("docs/*.md")})
			got := st.await(t, v.ID)
			require.Equal(t, tools.SubagentFailed, got.Status)
			require.NotNil(t, got.WriteSetViolation, "%+v", got.Error)
			require.Equal(t, tt.want, got.WriteSetViolation.Paths)
			info, err := os.Stat(filepath.Join(root, "README.md"))
			require.NoError(t, err)
			require.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "the kernel sandbox does not stop a chmod")
		})
	}
}

// A writer whose changes could not be found (the stamping of what it can
// reach failed: here its write set lies beneath a file, which the scan
// cannot go through) is not reported completed as if it had been checked
// and found clean: the check's failure is said, and the run is not
// completed.
func TestAWriterWhoseWriteCheckCouldNotRunIsNotCompleted(t *testing.T) {
	needLandlock(t) // so only the write set's roots are stamped
	f := newManagerFixtureSandboxed(t, SubagentConfig{}, childProvider{}, nil)
	root := f.parent.workspace.Root()
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes"), []byte("a file\n"), 0o644))
	st := newSteps(f)
	v := st.start(t, workflows.StepRequest{Name: "n", Task: "done", WorkspaceMode: WorkspaceShared,
		WriteSet: []string{"notes/x/*.md"}, MayWrite: globMatcher("notes/x/*.md")})
	got := st.await(t, v.ID)
	require.NotEqual(t, tools.SubagentCompleted, got.Status, "a writer whose write check could not run was reported completed")
	require.NotNil(t, got.Error)
	require.Contains(t, got.Error.Message, "could not be checked against notes/x/*.md")
	require.Nil(t, got.Changes, "its changes are unknown, not none")
}
