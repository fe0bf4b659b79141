package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/acp/client"
)

// Merge-back through the binary: a parent (a fake OpenAI-compatible model
// server) spawns two isolated writers, waits for them and merges them one
// after the other with merge_agent; the children's edits are real tool
// calls in their snapshots.

// oaCall is one tool call a fake model asks for.
type oaCall struct{ id, name, args string }

// mergeParent plays the parent: spawn the two children, wait, merge A,
// merge B (each by the id its spawn returned), answer. children maps a tag
// in a child's task ("[A]") to the tool calls it makes, all in its first
// reply; a child then answers "done".
type mergeParent struct {
	t        *testing.T
	children map[string][]oaCall
	// mergeArgs are merge_agent's extra arguments (`,"dry_run":true`).
	mergeArgs string

	mu   sync.Mutex
	last []chatMessage // the parent's last request
}

type chatMessage struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
}

var spawnedID = regexp.MustCompile(`"id":"(sa-[0-9a-f]+)"`)

func (p *mergeParent) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Messages []chatMessage `json:"messages"`
	}
	require.NoError(p.t, json.Unmarshal(body, &req))
	var task string
	assistants := 0
	for _, m := range req.Messages {
		switch {
		case m.Role == "user" && task == "" && m.Content != nil:
			task = *m.Content
		case m.Role == "assistant":
			assistants++
		}
	}
	reply := func(calls ...oaCall) {
		var parts [][]string
		for i, c := range calls {
			parts = append(parts, oaToolCall(i, c.id, c.name, c.args))
		}
		parts = append(parts, []string{oaChunk(`{}`, "tool_calls"), oaDone})
		sseReply(0, concat(parts...)...)(w, r, body)
	}
	for tag, calls := range p.children {
		if strings.Contains(task, tag) {
			if assistants == 0 {
				reply(calls...)
			} else {
				oaAnswer("done", 10, 1)(w, r, body)
			}
			return
		}
	}
	p.mu.Lock()
	p.last = req.Messages
	p.mu.Unlock()
	idOf := func(call string) string {
		for _, m := range req.Messages {
			if m.Role == "tool" && m.ToolCallID == call && m.Content != nil {
				if sub := spawnedID.FindStringSubmatch(*m.Content); sub != nil {
					return sub[1]
				}
			}
		}
		p.t.Errorf("no child id in the result of %s", call)
		return "sa-none"
	}
	switch assistants {
	case 0:
		reply(oaCall{"call_spawn_a", "spawn_agent", `{"task":"[A] edit the files"}`},
			oaCall{"call_spawn_b", "spawn_agent", `{"task":"[B] edit the files"}`})
	case 1:
		reply(oaCall{"call_wait", "wait_agent", `{"timeout_ms":60000}`})
	case 2:
		reply(oaCall{"call_merge_a", "merge_agent", `{"id":"` + idOf("call_spawn_a") + `"` + p.mergeArgs + `}`})
	case 3:
		reply(oaCall{"call_merge_b", "merge_agent", `{"id":"` + idOf("call_spawn_b") + `"` + p.mergeArgs + `}`})
	default:
		oaAnswer("merged both", 10, 2)(w, r, body)
	}
}

// result is the parent's tool result of call, decoded.
func (p *mergeParent) result(call string) map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.last {
		if m.Role == "tool" && m.ToolCallID == call && m.Content != nil {
			var res map[string]any
			require.NoError(p.t, json.Unmarshal([]byte(*m.Content), &res), *m.Content)
			return res
		}
	}
	p.t.Fatalf("no result of %s in the parent's last request", call)
	return nil
}

func edit(path, old, new string) string {
	b, _ := json.Marshal(map[string]string{"path": path, "old_text": old, "new_text": new})
	return string(b)
}

func bashCall(command string) string {
	b, _ := json.Marshal(map[string]string{"command": command})
	return string(b)
}

const tenLines = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"

// mergeRunEnv is a workspace that is a git repository with f.txt, c.txt,
// g.txt and b.bin committed, and pixir configured to use srv.
func mergeRunEnv(t *testing.T, srv *fakeModel) *runEnv {
	t.Helper()
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	e := newRunEnv(t)
	t.Setenv("HOME", filepath.Join(e.home, "user"))
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(
		"provider = \"openai\"\nbase_url = \""+srv.URL+"/v1\"\nmodel = \"m\"\n"), 0o644))
	e.file("f.txt", tenLines)
	e.file("c.txt", "shared line\nrest\n")
	e.file("g.txt", "keep me\n")
	e.file("b.bin", "base\x00binary")
	git(t, e.ws, "init", "-q")
	git(t, e.ws, "add", "-A")
	git(t, e.ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
	return e
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

func (e *runEnv) read(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, name))
	require.NoError(e.t, err)
	return string(b)
}

// Two isolated writers: different hunks of one file both land; the same
// hunk, delete against edit and a binary file changed on both sides are
// conflicts, reported per file (and hunk), and those files are left as
// the first merge made them.
func TestMergeAgentLandsTwoWritersAndReportsConflicts(t *testing.T) {
	p := &mergeParent{t: t, children: map[string][]oaCall{
		"[A]": {
			{"a1", "edit", edit("f.txt", "two\n", "TWO by A\n")},
			{"a2", "edit", edit("c.txt", "shared line\n", "line as A has it\n")},
			{"a3", "bash", bashCall(`rm g.txt && printf 'A\000binary' > b.bin && mkdir -p new && echo added by A > new/a.txt`)},
		},
		"[B]": {
			{"b1", "edit", edit("f.txt", "nine\n", "NINE by B\n")},
			{"b2", "edit", edit("c.txt", "shared line\n", "line as B has it\n")},
			{"b3", "edit", edit("g.txt", "keep me\n", "kept and changed by B\n")},
			{"b4", "bash", bashCall(`printf 'B\000binary' > b.bin`)},
		},
	}}
	srv := newFakeModel(t, p.serve)
	e := mergeRunEnv(t, srv)

	stdout, stderr, code := e.pixir("run", "--json", "merge the children")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)

	a := p.result("call_merge_a")
	require.Equal(t, true, a["ok"], "%v", a)
	outA := a["output"].(map[string]any)
	require.Equal(t, "merged", outA["status"])
	require.Equal(t, map[string]any{"added": []any{"new/a.txt"}, "updated": []any{"b.bin", "c.txt", "f.txt"}, "deleted": []any{"g.txt"}}, outA["applied"])

	b := p.result("call_merge_b")
	require.Equal(t, false, b["ok"], "a conflicted merge is not a success: %v", b)
	outB := b["output"].(map[string]any)
	require.Equal(t, "conflicted", outB["status"])
	require.Equal(t, map[string]any{"merged": []any{"f.txt"}}, outB["applied"], "f.txt: a different hunk, merged three-way")
	kinds := map[string]string{}
	for _, c := range outB["conflicts"].([]any) {
		c := c.(map[string]any)
		kinds[c["path"].(string)] = c["kind"].(string)
		if c["path"] == "c.txt" {
			hunks := c["hunks"].([]any)
			require.Len(t, hunks, 1)
			h := hunks[0].(map[string]any)
			require.Equal(t, "line as A has it\n", h["workspace"])
			require.Equal(t, "shared line\n", h["base"])
			require.Equal(t, "line as B has it\n", h["child"])
		}
	}
	require.Equal(t, map[string]string{"b.bin": "binary", "c.txt": "content", "g.txt": "changed_by_child_deleted_in_workspace"}, kinds)

	// The workspace: both hunks of f.txt; the conflicting files as A left them.
	require.Equal(t, strings.Replace(strings.Replace(tenLines, "two\n", "TWO by A\n", 1), "nine\n", "NINE by B\n", 1), e.read("f.txt"))
	require.Equal(t, "line as A has it\nrest\n", e.read("c.txt"))
	require.Equal(t, "A\x00binary", e.read("b.bin"))
	require.NoFileExists(t, filepath.Join(e.ws, "g.txt"))
	require.Equal(t, "added by A\n", e.read("new/a.txt"))

	// Pixir's state stays out of git, and nothing of the merge is left over.
	status := git(t, e.ws, "status", "--porcelain", "--untracked-files=all")
	require.NotContains(t, status, ".pixir")
	git(t, e.ws, "add", "-A")
	staged := git(t, e.ws, "diff", "--cached", "--name-only")
	require.NotContains(t, staged, ".pixir", "git add -A stages nothing under .pixir/")
	entries, _ := os.ReadDir(filepath.Join(e.ws, ".pixir", "merges"))
	for _, en := range entries {
		require.False(t, en.IsDir(), "a merge left %s behind", en.Name())
	}
}

// In ask mode each merge asks once, showing every file's diff; a rejection
// writes nothing; an allowed merge writes text through the editor's
// fs/write_text_file when the client offers it.
func TestMergeAgentAsksWithDiffsAndWritesThroughTheEditor(t *testing.T) {
	p := &mergeParent{t: t, children: map[string][]oaCall{
		"[A]": {{"a1", "edit", edit("f.txt", "two\n", "TWO by A\n")}},
		"[B]": {{"b1", "edit", edit("f.txt", "nine\n", "NINE by B\n")}},
	}}
	srv := newFakeModel(t, p.serve)
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	e := newEnv(t, "")
	t.Setenv("HOME", filepath.Join(e.home, "user"))
	e.writeConfig("provider = \"openai\"\nbase_url = \"" + srv.URL + "/v1\"\nmodel = \"m\"\n")
	target := filepath.Join(e.ws, "f.txt")
	require.NoError(t, os.WriteFile(target, []byte(tenLines), 0o644))

	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
		"fs": map[string]any{"readTextFile": true, "writeTextFile": true}}}, nil)
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)

	var questions []map[string]any // about merges
	var written []map[string]any
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "merge the children")})
	m, _ := a.serveUntilReply("3", map[string]func(json.RawMessage) any{
		"session/request_permission": func(raw json.RawMessage) any {
			var q map[string]any
			require.NoError(t, json.Unmarshal(raw, &q))
			answer := "allow_once"
			if title, _ := q["toolCall"].(map[string]any)["title"].(string); strings.HasPrefix(title, "Merge ") {
				questions = append(questions, q)
				if len(questions) == 1 {
					answer = "reject_once" // the first merge (A) is declined
				}
			}
			res, err := client.Select(raw, answer)
			require.NoError(t, err)
			return res
		},
		"fs/read_text_file": func(raw json.RawMessage) any {
			var req struct{ Path string }
			require.NoError(t, json.Unmarshal(raw, &req))
			b, err := os.ReadFile(req.Path)
			if err != nil {
				return &rpcError{Code: -32002, Message: "Resource not found"}
			}
			return map[string]any{"content": string(b)}
		},
		"fs/write_text_file": func(raw json.RawMessage) any {
			var req map[string]any
			require.NoError(t, json.Unmarshal(raw, &req))
			written = append(written, req)
			require.NoError(t, os.WriteFile(req["path"].(string), []byte(req["content"].(string)), 0o644))
			return map[string]any{}
		},
	})
	require.Equal(t, "end_turn", stopReason(t, m))

	require.Len(t, questions, 2, "one question per merge")
	withA := strings.Replace(tenLines, "two\n", "TWO by A\n", 1)
	withB := strings.Replace(tenLines, "nine\n", "NINE by B\n", 1)
	for k, want := range []string{withA, withB} {
		content := questions[k]["toolCall"].(map[string]any)["content"].([]any)
		require.Len(t, content, 1, "%v", content)
		require.Equal(t, map[string]any{"type": "diff", "path": target, "oldText": tenLines, "newText": want}, content[0])
	}

	rejected := p.result("call_merge_a")
	require.Equal(t, false, rejected["ok"])
	require.Equal(t, "permission_denied", rejected["error"].(map[string]any)["kind"])
	merged := p.result("call_merge_b")
	require.Equal(t, true, merged["ok"], "%v", merged)
	require.Equal(t, map[string]any{"updated": []any{"f.txt"}}, merged["output"].(map[string]any)["applied"])

	require.Equal(t, []map[string]any{{"sessionId": sid, "path": target, "content": withB}}, written, "written through the editor, once")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, withB, string(b))
}

// A client that reads files but does not write them (fs.readTextFile
// only): a merge of a file the workspace keeps read-only, which the child
// made writable in its copy and changed, is written by the merge itself.
// It went through the file tools' writer, which refuses a read-only file
// (d69dbb2), and the merge was cut off midway.
func TestAMergeForAReadingClientWritesAReadOnlyFile(t *testing.T) {
	p := &mergeParent{t: t, children: map[string][]oaCall{
		"[A]": {{"a1", "bash", bashCall("chmod u+w f.txt && sed -i s/two/TWO/ f.txt")}},
		"[B]": {{"b1", "edit", edit("g.txt", "g\n", "G\n")}},
	}}
	srv := newFakeModel(t, p.serve)
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	e := newEnv(t, "")
	t.Setenv("HOME", filepath.Join(e.home, "user"))
	e.writeConfig("provider = \"openai\"\nbase_url = \"" + srv.URL + "/v1\"\nmodel = \"m\"\n")
	target := filepath.Join(e.ws, "f.txt")
	require.NoError(t, os.WriteFile(target, []byte(tenLines), 0o444))
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "g.txt"), []byte("g\n"), 0o644))

	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
		"fs": map[string]any{"readTextFile": true}}}, nil)
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "merge the children")})
	m, _ := a.serveUntilReply("3", map[string]func(json.RawMessage) any{
		"fs/read_text_file": func(raw json.RawMessage) any {
			var req struct{ Path string }
			require.NoError(t, json.Unmarshal(raw, &req))
			b, err := os.ReadFile(req.Path)
			if err != nil {
				return &rpcError{Code: -32002, Message: "Resource not found"}
			}
			return map[string]any{"content": string(b)}
		},
	})
	require.Equal(t, "end_turn", stopReason(t, m))
	merged := p.result("call_merge_a")
	require.Equal(t, true, merged["ok"], "%v", merged)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, strings.Replace(tenLines, "two\n", "TWO\n", 1), string(b))
	require.Equal(t, true, p.result("call_merge_b")["ok"])
	b, err = os.ReadFile(filepath.Join(e.ws, "g.txt"))
	require.NoError(t, err)
	require.Equal(t, "G\n", string(b))
	a.exit()
}

// A workflow's writer whose file the user changed on the same line while
// it ran: the run merges what it can, leaves that file as the user has it,
// and the step needs the orchestrator, with the safe next actions; a
// writer after it in dependency order is held.
func TestWorkflowMergeConflictNeedsTheOrchestrator(t *testing.T) {
	var ws string
	var once sync.Once
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req struct {
			Messages []chatMessage `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(body, &req))
		if req.Messages[len(req.Messages)-1].Role == "tool" {
			oaAnswer("done", 10, 1)(w, r, body)
			return
		}
		// While the writer works, the user edits the same line.
		once.Do(func() {
			require.NoError(t, os.WriteFile(filepath.Join(ws, "f.txt"), []byte(strings.Replace(tenLines, "two\n", "two by the user\n", 1)), 0o644))
		})
		sseReply(0, concat(
			oaToolCall(0, "e1", "edit", edit("f.txt", "two\n", "two by the step\n")),
			oaToolCall(1, "e2", "write", `{"path":"notes.txt","content":"a note\n"}`),
			[]string{oaChunk(`{}`, "tool_calls"), oaDone})...)(w, r, body)
	})
	e := mergeRunEnv(t, srv)
	ws = e.ws
	wf := e.file("wf.json", `{"steps":[
		{"id":"fix","task":"fix it","write_set":["f.txt","notes.txt"]},
		{"id":"after","task":"then this","depends_on":["fix"]}]}`)
	stdout, stderr, code := e.pixir("run", "--workflow", wf, "--json")
	require.Equal(t, exitError, code, "stdout: %s\nstderr: %s", stdout, stderr)
	out := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	require.Equal(t, "failed", out["status"], "no step is checkpoint_ready: never completed")
	fix := out["steps"].([]any)[0].(map[string]any)
	require.Equal(t, "needs_orchestrator", fix["checkpoint_status"])
	merge := fix["merge"].(map[string]any)
	require.Equal(t, "conflicted", merge["status"])
	require.Equal(t, map[string]any{"added": []any{"notes.txt"}}, merge["applied"], "what does not conflict is merged")
	conflict := merge["conflicts"].([]any)[0].(map[string]any)
	require.Equal(t, "f.txt", conflict["path"])
	require.Equal(t, "content", conflict["kind"])
	require.Equal(t, []any{"fix"}, conflict["steps"])
	require.Equal(t, "held", out["steps"].([]any)[1].(map[string]any)["checkpoint_status"])
	var actions []string
	for _, a := range out["safe_next_actions"].([]any) {
		actions = append(actions, a.(map[string]any)["action"].(string))
	}
	require.Subset(t, actions, []string{"resolve_then_merge", "keep_in_snapshot", "discard"})

	require.Equal(t, strings.Replace(tenLines, "two\n", "two by the user\n", 1), e.read("f.txt"), "the conflicting file is untouched")
	require.Equal(t, "a note\n", e.read("notes.txt"))
	snap, err := os.ReadFile(filepath.Join(fix["workspace"].(string), "f.txt"))
	require.NoError(t, err)
	require.Contains(t, string(snap), "<<<<<<< workspace\ntwo by the user\n||||||| base\ntwo\n=======\ntwo by the step\n>>>>>>> step fix", "the snapshot holds the conflict to resolve")

	// The live view and pixir inspect say it too.
	require.Contains(t, stderr, "step fix needs_orchestrator")
	require.Contains(t, stderr, "conflicted (1 file; 1 merged)")
	sid := regexp.MustCompile(`pixir: session ([0-9a-f-]{8,}) `).FindStringSubmatch(stderr)[1]
	stdout, stderr, code = e.pixir("inspect", sid)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "merge: conflicted (1 file; 1 merged)")
	require.Contains(t, stdout, "conflict: f.txt (content): both sides changed the same lines in 1 place")
}

// An isolated child's git is its own: git status shows its changes alone
// (the parent's uncommitted change is in its base), and its git stash and
// git reset --hard leave the parent's repository and working tree as they
// were.
func TestAChildsGitIsItsOwn(t *testing.T) {
	var mu sync.Mutex
	var childSaw string
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req struct {
			Messages []chatMessage `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(body, &req))
		var task string
		assistants := 0
		for _, m := range req.Messages {
			if m.Role == "user" && task == "" && m.Content != nil {
				task = *m.Content
			}
			if m.Role == "assistant" {
				assistants++
			}
		}
		call := func(id, name, args string) {
			sseReply(0, concat(oaToolCall(0, id, name, args), []string{oaChunk(`{}`, "tool_calls"), oaDone})...)(w, r, body)
		}
		switch {
		case strings.Contains(task, "[git]") && assistants == 0:
			call("g1", "bash", bashCall(`echo mine > mine.txt && echo child >> f.txt && git status --porcelain && echo --- && `+
				`git stash -u -q && git reset -q --hard && git status --porcelain && echo --- && git log --format=%s -1`))
		case strings.Contains(task, "[git]"):
			mu.Lock()
			childSaw = *req.Messages[len(req.Messages)-1].Content
			mu.Unlock()
			oaAnswer("done", 10, 1)(w, r, body)
		case assistants == 0:
			call("s", "spawn_agent", `{"task":"[git] use git"}`)
		case assistants == 1:
			call("w", "wait_agent", `{"timeout_ms":60000}`)
		default:
			oaAnswer("ok", 10, 1)(w, r, body)
		}
	})
	e := mergeRunEnv(t, srv)
	e.file("g.txt", "uncommitted in the parent\n")
	head := git(t, e.ws, "rev-parse", "HEAD")

	stdout, stderr, code := e.pixir("run", "--json", "let a child use git")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	mu.Lock()
	saw := childSaw
	mu.Unlock()
	require.Contains(t, saw, " M f.txt\\n?? mine.txt\\n---\\n---\\nPixir snapshot", "the child's git shows its own changes, then none after its reset")

	require.Equal(t, "uncommitted in the parent\n", e.read("g.txt"), "the parent's uncommitted change is intact")
	require.Equal(t, tenLines, e.read("f.txt"))
	require.Equal(t, head, git(t, e.ws, "rev-parse", "HEAD"))
	require.Empty(t, git(t, e.ws, "stash", "list"), "the child's stash is in its own repository")
	require.Equal(t, " M g.txt\n", git(t, e.ws, "status", "--porcelain"))
}
