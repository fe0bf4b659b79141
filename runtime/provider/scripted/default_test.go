package scripted

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
)

func okResult(output any) string {
	b, err := json.Marshal(map[string]any{"ok": true, "output": output})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func failResult(kind, msg string) string {
	b, err := json.Marshal(map[string]any{"ok": false, "error": map[string]any{"kind": kind, "message": msg}})
	if err != nil {
		panic(err)
	}
	return string(b)
}

type wantCall struct {
	name string
	args string // JSON; compared with JSONEq unless verbatim
	raw  bool   // compare args byte for byte
}

// step is one model call of a turn: the tool result the previous call's
// tool call got (if any), and what the reply must contain.
type step struct {
	result    string // tool result of the previous call's tool call
	contains  []string
	absent    []string // in no step's text
	reasoning bool
	calls     []wantCall
}

func TestDefaultParses(t *testing.T) {
	s := Default()
	require.Same(t, s, Default(), "parsed once")
	require.Equal(t, DefaultName, s.Name())

	_, err := Parse("default.toml", defaultTOML)
	require.NoError(t, err)

	last := s.rules[len(s.rules)-1]
	require.Nil(t, last.match, "the last rule catches everything")
	for _, r := range s.rules {
		require.Contains(t, r.label, `"`, "every default rule has a name: %s", r.label)
	}
}

func TestDefaultConversations(t *testing.T) {
	lsOut := okResult(map[string]any{"exit_code": 0, "output": "total 8\ndrwxr-xr-x 2 me me 4096 .\n-rw-r--r-- 1 me me 12 main.go\n"})
	helloContent := "Hello from Pixir!\n\nThis file was written by the offline scripted provider.\nAsk me to \"edit the file\" to change the first line.\n"
	tests := []struct {
		name  string
		user  string
		steps []step
	}{
		{"greeting", "Hello there!", []step{
			{contains: []string{"Hello!", `You said: "Hello there!"`, "list the files"}},
		}},
		{"greeting hi", "hi pixir", []step{{contains: []string{"Hello!"}}}},
		{"list", "please list the files", []step{
			{reasoning: true, calls: []wantCall{{name: "bash", args: `{"command":"ls -la"}`}}},
			{result: lsOut, contains: []string{"Here is what `ls -la` shows:", "total 8", "main.go"}},
		}},
		{"list fails", "look around", []step{
			{reasoning: true, calls: []wantCall{{name: "bash", args: `{"command":"ls -la"}`}}},
			{result: failResult("permission_denied", "bash is not allowed in read_only mode"),
				contains: []string{"did not work", "permission_denied: bash is not allowed"}},
		}},
		{"list exit code", "ls", []step{
			{reasoning: true, calls: []wantCall{{name: "bash", args: `{"command":"ls -la"}`}}},
			{result: okResult(map[string]any{"exit_code": 2, "output": "ls: cannot open directory '.'\n"}),
				contains: []string{"(exit code 2)", "cannot open directory"}},
		}},
		{"list files", "what files are here?", []step{
			{reasoning: true, calls: []wantCall{{name: "bash", args: `{"command":"ls -la"}`}}},
		}},
		{"delegate", "delegate it to a subagent", []step{
			{reasoning: true, calls: []wantCall{{name: "spawn_agent", args: `{"agent":"default","task":"look around and list the files"}`}}},
			{result: okResult(map[string]any{"id": "sa-1", "status": "queued"}), calls: []wantCall{{name: "wait_agent", args: `{"timeout_ms":60000}`}}},
			{result: okResult(map[string]any{"agents": []any{map[string]any{"id": "sa-1", "status": "completed", "summary": "Here is what ls shows"}}}),
				contains: []string{"The subagent (sa-1) finished with status completed", "Here is what ls shows"}},
		}},
		{"workflow", "run a workflow please", []step{
			{reasoning: true, calls: []wantCall{{name: "run_workflow"}}},
			{result: `{"ok":false,"output":{"output":"Workflow wf-1: PARTIAL — 2 of 3 steps checkpoint_ready","status":"partial","summary":{"steps":3,"checkpoint_ready_steps":2}}}`,
				contains: []string{"ended **partial**: 2 of 3 steps", "Workflow wf-1: PARTIAL"}},
		}},
		{"workflow refused", "run a workflow please", []step{
			{reasoning: true, calls: []wantCall{{name: "run_workflow"}}},
			{result: failResult("permission_denied", "run_workflow changes the workspace and the session is in read_only mode"),
				contains: []string{"The workflow did not run: permission_denied: run_workflow changes the workspace"}, absent: []string{"****", " of  steps"}},
		}},
		{"delegate refused", "delegate it to a subagent", []step{
			{reasoning: true, calls: []wantCall{{name: "spawn_agent"}}},
			{result: failResult("permission_denied", "spawn_agent changes the workspace and the session is in read_only mode"),
				calls: []wantCall{{name: "wait_agent", args: `{"timeout_ms":60000}`}}},
			{result: okResult(map[string]any{"agents": []any{}}),
				contains: []string{"No subagent ran, so there is no report"}, absent: []string{"The subagent ()", "status ."}},
		}},
		{"plan a workflow", "plan a workflow", []step{
			{reasoning: true, calls: []wantCall{{name: "run_workflow"}}},
			{result: okResult(map[string]any{"output": "Dry run: 4 steps in 3 waves", "mode": "dry_run"}), contains: []string{"Dry run: 4 steps in 3 waves", "run a workflow"}},
		}},
		{"workflow step", "Survey it.\n\n---\nYou are step \"survey\" of a workflow. Your posture is read_only. ... status checkpoint_ready, partial, failed or needs_orchestrator", []step{
			{calls: []wantCall{{name: "report_checkpoint"}}},
			{result: okResult(map[string]any{"recorded": true}), contains: []string{"checkpoint is reported"}},
		}},
		{"write", "create a file please", []step{
			{reasoning: true, contains: []string{"hello.txt"}, calls: []wantCall{{name: "write",
				args: mustJSON(map[string]string{"path": "hello.txt", "content": helloContent})}}},
			{result: okResult(map[string]any{"path": "hello.txt", "bytes": 120}),
				contains: []string{"Written"}, calls: []wantCall{{name: "read", args: `{"path":"hello.txt"}`}}},
			{result: okResult(map[string]any{"content": helloContent}),
				contains: []string{"Done", "Hello from Pixir!", "written by the offline scripted provider"}},
		}},
		{"write denied", "Write something", []step{
			{reasoning: true, calls: []wantCall{{name: "write"}}},
			{result: failResult("permission_denied", "denied by the user"),
				contains: []string{"did not go through", "denied by the user"}, calls: []wantCall{{name: "read", args: `{"path":"hello.txt"}`}}},
			{result: failResult("not_found", "hello.txt does not exist"),
				contains: []string{"could not read", "not_found"}},
		}},
		{"edit", "edit the file", []step{
			{reasoning: true, calls: []wantCall{{name: "edit",
				args: `{"path":"hello.txt","old_text":"Hello from Pixir!","new_text":"Hello again from Pixir, now edited!"}`}}},
			{result: okResult(map[string]any{"replacements": 1}), contains: []string{"Edited", "Hello again from Pixir"}},
		}},
		{"edit without file", "edit the file", []step{
			{calls: []wantCall{{name: "edit"}}},
			{result: failResult("not_found", "hello.txt"), contains: []string{"did not work", "create a file"}},
		}},
		{"read", "read the README", []step{
			{calls: []wantCall{{name: "read", args: `{"path":"README.md"}`}}},
			{result: okResult(map[string]any{"content": "# Pixir\nA runtime.\n"}), contains: []string{"# Pixir", "A runtime."}},
		}},
		{"bad arguments", "show me bad arguments", []step{
			{reasoning: true, calls: []wantCall{{name: "read", args: `{"path": 1}`, raw: true}}},
			{result: failResult("invalid_args", "/path: got number, want string"),
				contains: []string{"refused", "invalid_args: /path: got number, want string", "not a crash"}},
		}},
		{"help", "what is the meaning of life?", []step{
			{contains: []string{"offline scripted provider", `"what is the meaning of life?"`,
				"list the files", "create a file", "edit the file", "read the README", "run a workflow", "plan a workflow", "think hard", "hang", "fail", "bad arguments"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs := []provider.Message{user(tc.user)}
			var prev *provider.ModelResponse
			for i, st := range tc.steps {
				if st.result != "" {
					require.NotNil(t, prev)
					require.Len(t, prev.ToolCalls, 1)
					msgs = append(msgs, provider.Message{Role: provider.RoleTool, Text: st.result,
						ToolCallID: prev.ToolCalls[0].ID, ToolName: prev.ToolCalls[0].Name})
				}
				resp := gen(t, Default(), msgs...)
				for _, c := range st.contains {
					require.Contains(t, resp.Text, c, "step %d", i+1)
				}
				for _, c := range st.absent {
					require.NotContains(t, resp.Text, c, "step %d", i+1)
				}
				if st.reasoning {
					require.NotEmpty(t, resp.Reasoning, "step %d", i+1)
				}
				require.Len(t, resp.ToolCalls, len(st.calls), "step %d: %s", i+1, resp.Text)
				for j, c := range st.calls {
					got := resp.ToolCalls[j]
					require.Equal(t, c.name, got.Name)
					switch {
					case c.raw:
						require.Equal(t, c.args, string(got.Arguments))
					case c.args != "":
						require.JSONEq(t, c.args, string(got.Arguments))
					}
				}
				require.NotContains(t, resp.Text, "no rule in", "the default script never falls back")
				msgs = append(msgs, provider.Message{Role: provider.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
				prev = resp
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestDefaultFail(t *testing.T) {
	r := generate(context.Background(), Default(), "m", user("please fail now"))
	require.EqualError(t, r.err, "the scripted provider was told to fail")
	require.Nil(t, r.resp)
}

func TestDefaultHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		r := generate(ctx, Default(), "m", user("hang"))
		require.ErrorIs(t, r.err, context.DeadlineExceeded)
		require.Equal(t, 50*time.Millisecond, time.Since(start), "it hangs until the deadline, no longer")
		require.Empty(t, r.deltas)
	})
}

func TestDefaultSlow(t *testing.T) {
	for _, text := range []string{"be slow", "think hard about it", "Please THINK HARD"} {
		t.Run(text, func(t *testing.T) {
			r := Default().find(text)
			require.NotNil(t, r)
			require.Contains(t, r.label, `"slow"`)
			require.Positive(t, r.replies[0].chunkDelay)
		})
	}

	// Cancel after the third chunk: the stream stops there, at once.
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var got []provider.Delta
		var cancelledAt time.Time
		_, err := New(Default()).Generate(ctx, provider.ModelRequest{Messages: []provider.Message{user("think hard")}}, func(d provider.Delta) {
			got = append(got, d)
			if len(got) == 3 {
				cancel()
				cancelledAt = time.Now()
			}
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Len(t, got, 3)
		require.Equal(t, provider.DeltaReasoning, got[0].Kind)
		require.Zero(t, time.Since(cancelledAt), "no chunk delay after the cancel")
	})
}

func TestDefaultRuleOrder(t *testing.T) {
	tests := []struct{ user, rule string }{
		{"hello, please list the files", "list"},
		{"hi, write a file", "write"},
		{"create hello.txt", "write"},
		{"hello", "greeting"},
		{"use subagents", "delegate"},
		{"delegate looking around and listing the files", "delegate"},
		{"good morning", "greeting"},
		{"this will fail", "fail"},
		{"failure please", "fail"},
		{"make it hang", "hang"},
		// A compaction's summary request holds the transcript, whatever
		// words it has: it hung on the hang rule.
		{"User: make it hang\n\nSummarize the conversation above in at most about 300 words.", "compaction summary"},
		{"change the world", "help"},
		{"show me the readme", "read"},
		{"edit hello.txt", "edit"},
		{"which editor is this?", "help"},
		{"ls", "list"},
		{"", "help"},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			r := Default().find(tc.user)
			require.NotNil(t, r)
			require.True(t, strings.HasSuffix(r.label, `"`+tc.rule+`"`), "%q matched %s", tc.user, r.label)
		})
	}
}

// The example in the README's "Scripted provider" section must stay valid.
func TestReadmeExample(t *testing.T) {
	doc, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(doc), "## Scripted provider")
	require.True(t, found, "the README has a Scripted provider section")
	_, rest, found := strings.Cut(section, "```toml\n")
	require.True(t, found, "the Scripted provider section has a toml example")
	src, _, found := strings.Cut(rest, "```")
	require.True(t, found)
	s, err := Parse("demo.toml", []byte(src))
	require.NoError(t, err)

	require.Equal(t, "Hello! You said: hi there", gen(t, s, user("hi there")).Text)

	resp := gen(t, s, user("list please"))
	require.Equal(t, "Let me look.", resp.Text)
	require.Equal(t, "I'll look at the workspace first.", resp.Reasoning)
	require.Len(t, resp.ToolCalls, 1)
	resp = gen(t, s, user("list please"), asst("Let me look."),
		tool("bash", okResult(map[string]any{"exit_code": 0, "output": "a\nb\n"})))
	require.Equal(t, "Found:\na\nb", resp.Text)

	resp = gen(t, s, user("bad args"))
	require.Equal(t, `{"path": 1}`, string(resp.ToolCalls[0].Arguments))
	resp = gen(t, s, user("bad args"), asst(""), tool("read", failResult("invalid_args", "nope")))
	require.Equal(t, "The tool said: invalid_args: nope", resp.Text)

	require.Positive(t, s.find("slow").replies[0].chunkDelay)
	require.EqualError(t, generate(context.Background(), s, "m", user("fail")).err, "the scripted provider was told to fail")
	require.True(t, s.find("hang").replies[0].hang)
	require.Equal(t, "I only know: hello, list, bad args, slow, fail, hang.", gen(t, s, user("?")).Text)
}
