package scripted

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
)

func user(text string) provider.Message { return provider.Message{Role: provider.RoleUser, Text: text} }

func asst(text string) provider.Message {
	return provider.Message{Role: provider.RoleAssistant, Text: text}
}

func tool(name, text string) provider.Message {
	return provider.Message{Role: provider.RoleTool, ToolName: name, Text: text, ToolCallID: "call_x"}
}

func mustParse(t *testing.T, src string) *Script {
	t.Helper()
	s, err := Parse("test.toml", []byte(src))
	require.NoError(t, err)
	return s
}

type result struct {
	resp   *provider.ModelResponse
	deltas []provider.Delta
	err    error
}

func (r result) streamed(kind provider.DeltaKind) string {
	var b strings.Builder
	for _, d := range r.deltas {
		if d.Kind == kind {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

func generate(ctx context.Context, s *Script, model string, msgs ...provider.Message) result {
	var r result
	r.resp, r.err = New(s).Generate(ctx, provider.ModelRequest{Model: model, Messages: msgs}, func(d provider.Delta) {
		r.deltas = append(r.deltas, d)
	})
	return r
}

func gen(t *testing.T, s *Script, msgs ...provider.Message) *provider.ModelResponse {
	t.Helper()
	r := generate(context.Background(), s, "test-model", msgs...)
	require.NoError(t, r.err)
	require.NotNil(t, r.resp)
	require.Equal(t, r.resp.Text, r.streamed(provider.DeltaText), "streamed text must equal the response text")
	require.Equal(t, r.resp.Reasoning, r.streamed(provider.DeltaReasoning), "streamed reasoning must equal the response reasoning")
	return r.resp
}

func TestName(t *testing.T) {
	require.Equal(t, "scripted", New(Default()).Name())
}

func TestMatchOrderAndFallback(t *testing.T) {
	s := mustParse(t, `
[[rule]]
name = "apple"
match = "(?i)apple"
  [[rule.reply]]
  text = "first"
[[rule]]
match = "apple|banana"
  [[rule.reply]]
  text = "second"
[[rule]]
match = ""
  [[rule.reply]]
  text = "empty match matches all"
`)
	noCatchAll := mustParse(t, `
[[rule]]
match = "^only$"
  [[rule.reply]]
  text = "only"
`)
	long := strings.Repeat("word ", 30)
	tests := []struct {
		name   string
		script *Script
		msgs   []provider.Message
		want   string
	}{
		{"first rule wins", s, []provider.Message{user("an APPLE and a banana")}, "first"},
		{"second rule", s, []provider.Message{user("banana")}, "second"},
		{"empty match", s, []provider.Message{user("cherry")}, "empty match matches all"},
		{"latest user message counts", s, []provider.Message{user("apple"), asst("first"), user("banana")}, "second"},
		{"no user message", s, nil, "empty match matches all"},
		{"fallback", noCatchAll, []provider.Message{user("cherry\npie")},
			`I am Pixir's offline scripted provider and no rule in test.toml matches "cherry pie". ` +
				`Add a [[rule]] to the script (see README "Scripted provider").`},
		{"fallback shortens", noCatchAll, []provider.Message{user(long)},
			`I am Pixir's offline scripted provider and no rule in test.toml matches "` +
				truncate(60, strings.TrimSpace(long)) + `". Add a [[rule]] to the script (see README "Scripted provider").`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := gen(t, tc.script, tc.msgs...)
			require.Equal(t, tc.want, resp.Text)
			require.Empty(t, resp.ToolCalls)
		})
	}
}

func TestNthReply(t *testing.T) {
	s := mustParse(t, `
[[rule]]
  [[rule.reply]]
  text = "one"
  [[rule.reply]]
  text = "two"
  [[rule.reply]]
  text = "three {{.Call}}"
`)
	call := func(n int) []provider.Message {
		msgs := []provider.Message{user("old"), asst("x"), asst("y"), user("now")}
		for i := 1; i < n; i++ {
			msgs = append(msgs, asst("..."), tool("read", "{}"))
		}
		return msgs
	}
	tests := []struct {
		call int
		want string
	}{
		{1, "one"}, {2, "two"}, {3, "three 3"}, {4, "three 4"}, {7, "three 7"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, gen(t, s, call(tc.call)...).Text)
		})
	}
}

// A note Pixir adds in the middle of a turn (children that ended unseen)
// is a user message to the model but not the user's: the script goes on
// with the turn the user started instead of matching the note.
func TestANoteFromPixirDoesNotStartTheScriptAgain(t *testing.T) {
	s := mustParse(t, `
[[rule]]
match = "^fan out$"
  [[rule.reply]]
  text = "spawning"
  [[rule.reply]]
  text = "waiting"
  [[rule.reply]]
  text = "done after {{.Call}} calls"
`)
	note := provider.Message{Role: provider.RoleUser, Text: "[Pixir, not the user] These subagents ended", FromPixir: true}
	msgs := []provider.Message{user("fan out"), asst("spawning"), tool("spawn_agent", "{}"), note}
	require.Equal(t, "waiting", gen(t, s, msgs...).Text)
	msgs = append(msgs, asst("waiting"), tool("wait_agent", "{}"))
	require.Equal(t, "done after 3 calls", gen(t, s, msgs...).Text)
}

func TestTemplates(t *testing.T) {
	s := mustParse(t, `
[[rule]]
  [[rule.reply]]
  text = "u={{.User}} c={{.Call}} m={{.Model}} n={{.ToolName}} r={{.ToolResult}}"
  reasoning = "thinking about {{.User | truncate 3}}"
`)
	tests := []struct {
		name          string
		msgs          []provider.Message
		text, reasons string
	}{
		{"first call", []provider.Message{user("hello")},
			"u=hello c=1 m=test-model n= r=", "thinking about hel…"},
		{"latest tool result of the turn", []provider.Message{
			user("hello"), asst(""), tool("bash", "one"), tool("read", "two"),
		}, "u=hello c=2 m=test-model n=read r=two", "thinking about hel…"},
		{"tool results of earlier turns do not count", []provider.Message{
			user("old"), asst(""), tool("bash", "one"), asst("done"), user("hi"),
		}, "u=hi c=1 m=test-model n= r=", "thinking about hi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := gen(t, s, tc.msgs...)
			require.Equal(t, tc.text, resp.Text)
			require.Equal(t, tc.reasons, resp.Reasoning)
		})
	}
}

func TestTemplateFuncs(t *testing.T) {
	okBash := `{"ok":true,"output":{"exit_code":0,"output":"a\nb\nc\nd\n"}}`
	okString := `{"ok":true,"output":"plain"}`
	okOther := `{"ok":true,"output":{"n":1}}`
	failed := `{"ok":false,"error":{"kind":"not_found","message":"no such file: x"}}`
	tests := []struct {
		tmpl, result, want string
	}{
		{`{{ok .ToolResult}}`, okBash, "true"},
		{`{{ok .ToolResult}}`, failed, "false"},
		{`{{ok .ToolResult}}`, "not json", "false"},
		{`{{output .ToolResult}}`, okBash, "a\nb\nc\nd\n"},
		{`{{output .ToolResult}}`, okString, "plain"},
		{`{{output .ToolResult}}`, okOther, `{"n":1}`},
		{`{{output .ToolResult}}`, failed, "not_found: no such file: x"},
		{`{{output .ToolResult}}`, "not json", "not json"},
		{`{{output .ToolResult | lines 2}}`, okBash, "a\nb\n… (2 more lines)"},
		{`{{output .ToolResult | lines 4}}`, okBash, "a\nb\nc\nd\n"},
		{`{{output .ToolResult | trim | oneline}}`, okBash, "a b c d"},
		{`{{field "output.exit_code" .ToolResult}}`, okBash, "0"},
		{`{{field "error.kind" .ToolResult}}`, failed, "not_found"},
		{`{{field "output.missing" .ToolResult}}`, okBash, ""},
		{`{{field "output" .ToolResult}}`, okOther, `{"n":1}`},
		{`{{.ToolResult | truncate 4}}`, "héllo wörld", "héll…"},
		{`{{.ToolResult | truncate 40}}`, "héllo wörld", "héllo wörld"},
		{`{{with .ToolResult}}[{{.}}]{{else}}none{{end}}`, "", "none"},
		{`{{with .ToolResult}}[{{.}}]{{else}}none{{end}}`, "x", "[x]"},
	}
	for _, tc := range tests {
		t.Run(tc.tmpl+" "+tc.result, func(t *testing.T) {
			s := mustParse(t, "[[rule]]\n[[rule.reply]]\ntext = '''"+tc.tmpl+"'''\n")
			resp := gen(t, s, user("u"), asst(""), tool("t", tc.result))
			require.Equal(t, tc.want, resp.Text)
		})
	}
}

func TestChunks(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"one two", []string{"one ", "two"}},
		{"  lead and trail  ", []string{"  lead ", "and ", "trail  "}},
		{"a\n\nb\tc  ", []string{"a\n\n", "b\t", "c  "}},
		{"   ", []string{"   "}},
		{"héllo wörld ✓", []string{"héllo ", "wörld ", "✓"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got := chunks(tc.in)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.in, strings.Join(got, ""))
		})
	}
}

func TestStreaming(t *testing.T) {
	text := "  Hello,   world!\n\nThis is\ta test — with ünïcode ✓ and trailing space  "
	s := mustParse(t, `
[[rule]]
  [[rule.reply]]
  reasoning = "Reason one,\nreason two."
  text = '''`+text+`'''
`)
	r := generate(context.Background(), s, "m", user("x"))
	require.NoError(t, r.err)
	require.Equal(t, text, r.resp.Text)
	require.Equal(t, text, r.streamed(provider.DeltaText))
	require.Equal(t, "Reason one,\nreason two.", r.streamed(provider.DeltaReasoning))
	require.Greater(t, len(r.deltas), 10, "text is streamed in word-sized chunks")

	seenText := false
	for _, d := range r.deltas {
		require.NotEmpty(t, d.Text)
		require.LessOrEqual(t, len(strings.Fields(d.Text)), 1, "chunk %q has more than one word", d.Text)
		switch d.Kind {
		case provider.DeltaText:
			seenText = true
		case provider.DeltaReasoning:
			require.False(t, seenText, "reasoning must stream before text")
		default:
			t.Fatalf("unexpected delta kind %q", d.Kind)
		}
	}
}

func TestNilSink(t *testing.T) {
	resp, err := New(mustParse(t, "[[rule]]\n[[rule.reply]]\ntext = 'a b c'\n")).
		Generate(context.Background(), provider.ModelRequest{Messages: []provider.Message{user("x")}}, nil)
	require.NoError(t, err)
	require.Equal(t, "a b c", resp.Text)
}

func TestToolCalls(t *testing.T) {
	s := mustParse(t, `
[[rule]]
  [[rule.reply]]
  text = "Calling."
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "README.md", offset = 10, limit = 2.5, all = true, tags = ["a", "b"], nested = { k = "v" } }
  [[rule.reply.tool_calls]]
  name = "read"
  arguments_json = '{"path": 1, oops'
  [[rule.reply.tool_calls]]
  name = "bash"
  [rule.reply.tool_calls.arguments]
  command = "ls -la"
  [[rule.reply.tool_calls]]
  name = "list_agents"
`)
	for call := 1; call <= 2; call++ {
		msgs := []provider.Message{user("go")}
		if call == 2 {
			msgs = append(msgs, asst("Calling."), tool("read", "{}"))
		}
		resp := gen(t, s, msgs...)
		require.Equal(t, "Calling.", resp.Text)
		require.Len(t, resp.ToolCalls, 4)
		for i, c := range resp.ToolCalls {
			require.Equal(t, "call_"+string(rune('0'+call))+"_"+string(rune('1'+i)), c.ID)
		}
		require.Equal(t, "read", resp.ToolCalls[0].Name)
		require.JSONEq(t, `{"path":"README.md","offset":10,"limit":2.5,"all":true,"tags":["a","b"],"nested":{"k":"v"}}`,
			string(resp.ToolCalls[0].Arguments))
		require.Equal(t, `{"path": 1, oops`, string(resp.ToolCalls[1].Arguments), "arguments_json is sent verbatim")
		require.Equal(t, "bash", resp.ToolCalls[2].Name)
		require.JSONEq(t, `{"command":"ls -la"}`, string(resp.ToolCalls[2].Arguments))
		require.Equal(t, "list_agents", resp.ToolCalls[3].Name)
		require.JSONEq(t, `{}`, string(resp.ToolCalls[3].Arguments))
	}

	// Callers may modify what they get without changing the script.
	resp := gen(t, s, user("go"))
	resp.ToolCalls[0].Arguments[0] = 'X'
	require.JSONEq(t, `{"path":"README.md","offset":10,"limit":2.5,"all":true,"tags":["a","b"],"nested":{"k":"v"}}`,
		string(gen(t, s, user("go")).ToolCalls[0].Arguments))
}

func TestToolCallsOnly(t *testing.T) {
	s := mustParse(t, `
[[rule]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "true" }
`)
	r := generate(context.Background(), s, "m", user("x"))
	require.NoError(t, r.err)
	require.Empty(t, r.resp.Text)
	require.Empty(t, r.deltas)
	require.Len(t, r.resp.ToolCalls, 1)
}

func TestErrorRule(t *testing.T) {
	s := mustParse(t, `
[[rule]]
name = "boom"
match = "fail"
  [[rule.reply]]
  error = "the scripted provider was told to fail"
`)
	r := generate(context.Background(), s, "m", user("please fail"))
	require.Nil(t, r.resp)
	require.EqualError(t, r.err, "the scripted provider was told to fail")
	var re *ReplyError
	require.ErrorAs(t, r.err, &re)
	require.Equal(t, `rule 1 "boom" reply 1`, re.Reply)
	require.Empty(t, r.deltas)
}

func TestCancellation(t *testing.T) {
	tests := []struct {
		name   string
		script string
		// deltas is how many deltas must have arrived before the cancel.
		deltas int
	}{
		{"hang", "[[rule]]\n[[rule.reply]]\nhang = true\n", 0},
		{"delay", "[[rule]]\n[[rule.reply]]\ndelay_ms = 600000\ntext = 'never'\n", 0},
		{"delay before hang", "[[rule]]\n[[rule.reply]]\ndelay_ms = 600000\nhang = true\n", 0},
		{"chunk delay", "[[rule]]\n[[rule.reply]]\nchunk_delay_ms = 600000\ntext = 'one two three'\n", 1},
		{"chunk delay from reasoning to text", "[[rule]]\n[[rule.reply]]\nchunk_delay_ms = 600000\nreasoning = 'why'\ntext = 'what'\n", 1},
	}
	for _, tc := range tests {
		// In a synctest bubble "Generate is waiting" and "it returned at
		// the cancel, not at the end of its delay" are facts of the
		// bubble's clock, not guesses made with real milliseconds.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := mustParse(t, tc.script)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var mu sync.Mutex
				var got []provider.Delta
				done := make(chan error, 1)
				go func() {
					_, err := New(s).Generate(ctx, provider.ModelRequest{Messages: []provider.Message{user("x")}}, func(d provider.Delta) {
						mu.Lock()
						got = append(got, d)
						mu.Unlock()
					})
					done <- err
				}()
				synctest.Wait() // Generate is blocked in its wait
				select {
				case err := <-done:
					t.Fatalf("Generate returned before the cancel: %v", err)
				default:
				}
				mu.Lock()
				require.Len(t, got, tc.deltas, "deltas before the cancel")
				mu.Unlock()
				start := time.Now()
				cancel()
				require.ErrorIs(t, <-done, context.Canceled)
				require.Zero(t, time.Since(start), "Generate returned at the cancel, without waiting")
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, got, tc.deltas, "no delta after the cancel")
			})
		})
	}
}

func TestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustParse(t, "[[rule]]\n[[rule.reply]]\nhang = true\n")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		r := generate(ctx, s, "m", user("x"))
		require.ErrorIs(t, r.err, context.DeadlineExceeded)
		require.Nil(t, r.resp)
		require.Equal(t, 20*time.Millisecond, time.Since(start), "it ends at the deadline")
	})
}

func TestCancelledBeforeStart(t *testing.T) {
	s := mustParse(t, "[[rule]]\n[[rule.reply]]\ntext = 'hello there'\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := generate(ctx, s, "m", user("x"))
	require.ErrorIs(t, r.err, context.Canceled)
	require.Nil(t, r.resp)
	require.Empty(t, r.deltas)
}

func TestCancelFromSink(t *testing.T) {
	s := mustParse(t, "[[rule]]\n[[rule.reply]]\ntext = 'one two three four'\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []provider.Delta
	_, err := New(s).Generate(ctx, provider.ModelRequest{Messages: []provider.Message{user("x")}}, func(d provider.Delta) {
		got = append(got, d)
		cancel()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, got, 1)
}

func TestDelaysWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustParse(t, "[[rule]]\n[[rule.reply]]\ndelay_ms = 30\nchunk_delay_ms = 10\ntext = 'a b c'\n")
		start := time.Now()
		resp := gen(t, s, user("x"))
		require.Equal(t, "a b c", resp.Text)
		// 30 ms before the first chunk, 10 ms before each of the next two.
		require.Equal(t, 50*time.Millisecond, time.Since(start))
	})
}

func TestUsage(t *testing.T) {
	s := mustParse(t, "[[rule]]\n[[rule.reply]]\ntext = '"+strings.Repeat("x", 40)+"'\n")
	resp := gen(t, s, user(strings.Repeat("y", 400)))
	require.Equal(t, &provider.Usage{InputTokens: 100, OutputTokens: 10, ContextWindow: 128000}, resp.Usage)

	resp = gen(t, mustParse(t, "[[rule]]\n[[rule.reply]]\ntext = 'x'\n"), user("y"))
	require.Equal(t, &provider.Usage{InputTokens: 1, OutputTokens: 1, ContextWindow: 128000}, resp.Usage)
}

func TestConcurrentUse(t *testing.T) {
	p := New(Default())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			msgs := []provider.Message{user("list the files")}
			if i%2 == 1 {
				msgs = append(msgs, asst(""), tool("bash", `{"ok":true,"output":{"exit_code":0,"output":"f"}}`))
			}
			resp, err := p.Generate(context.Background(), provider.ModelRequest{Messages: msgs}, func(provider.Delta) {})
			require.NoError(t, err)
			require.Equal(t, i%2 == 0, len(resp.ToolCalls) == 1)
		})
	}
	wg.Wait()
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.toml")
	require.NoError(t, os.WriteFile(path, []byte("[[rule]]\n[[rule.reply]]\ntext = 'from file'\n"), 0o600))
	s, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, path, s.Name())
	require.Equal(t, "from file", gen(t, s, user("x")).Text)

	_, err = Load(filepath.Join(dir, "missing.toml"))
	require.ErrorIs(t, err, os.ErrNotExist)

	bad := filepath.Join(dir, "bad.toml")
	require.NoError(t, os.WriteFile(bad, []byte("[[rule]]\nmatch = '('\n[[rule.reply]]\ntext = 'x'\n"), 0o600))
	_, err = Load(bad)
	require.ErrorContains(t, err, bad+":2:1: rule 1: match is not a valid Go regexp")
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // each must appear in the error
		line int      // line of the first LoadError, 0 to skip
		col  int
	}{
		{"unknown key", `
[[rule]]
name = "a"
  [[rule.reply]]
  txt = "hi"
`, []string{`test.toml:5:3: unknown key "rule.reply.txt"; allowed in [[rule.reply]]: text, reasoning`}, 5, 3},
		{"unknown top-level table", `
[[rules]]
`, []string{`test.toml:2:3: unknown key "rules"; allowed at the top level: rule`}, 2, 3},
		{"several unknown keys", `
[[rule]]
mach = "a"
  [[rule.reply]]
  text = "x"
  [[rule.reply.tool_calls]]
  nam = "read"
`, []string{`test.toml:3:1: unknown key "rule.mach"`, `test.toml:7:3: unknown key "rule.reply.tool_calls.nam"`}, 3, 1},
		{"type error", `
[[rule]]
  [[rule.reply]]
  text = "x"
  delay_ms = "soon"
`, []string{`test.toml:5:14: rule.reply.delay_ms: got a TOML string, want integer`}, 5, 14},
		{"type error bool", `
[[rule]]
  [[rule.reply]]
  hang = 1
`, []string{`test.toml:4:10: rule.reply.hang: got a TOML integer, want boolean`}, 4, 10},
		{"syntax error", `
[[rule]
`, []string{`test.toml:2:`}, 2, 0},
		{"invalid regexp", `
[[rule]]
name = "x"
  [[rule.reply]]
  text = "ok"
[[rule]]
name = "broken"
match = "(?i)hello("
  [[rule.reply]]
  text = "ok"
`, []string{`test.toml:8:1: rule 2 "broken": match is not a valid Go regexp: error parsing regexp: missing closing )`}, 8, 1},
		{"rule without reply", `
[[rule]]
name = "lonely"
match = "x"
`, []string{`test.toml:2:3: rule 1 "lonely" has no reply: add at least one [[rule.reply]]`}, 2, 3},
		{"empty reply", `
[[rule]]
  [[rule.reply]]
  text = "fine"
  [[rule.reply]]
  delay_ms = 5
  reasoning = "only reasoning"
`, []string{`test.toml:5:5: rule 1 reply 2 is empty: give it text, tool_calls, error or hang`}, 5, 5},
		{"error with text", `
[[rule]]
  [[rule.reply]]
  error = "x"
  text = "y"
`, []string{`rule 1 reply 1: error or hang cannot be combined with text, reasoning, tool_calls or cut_off`}, 3, 5},
		{"hang with tool call", `
[[rule]]
  [[rule.reply]]
  hang = true
  [[rule.reply.tool_calls]]
  name = "read"
`, []string{`rule 1 reply 1: error or hang cannot be combined`}, 3, 5},
		{"error with hang", `
[[rule]]
  [[rule.reply]]
  hang = true
  error = "x"
`, []string{`rule 1 reply 1: error and hang cannot be combined`}, 3, 5},
		{"arguments and arguments_json", `
[[rule]]
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "x" }
  arguments_json = '{}'
`, []string{`test.toml:4:5: rule 1 reply 1 tool_calls[1]: arguments and arguments_json cannot both be set`}, 4, 5},
		{"tool call without name", `
[[rule]]
  [[rule.reply]]
  tool_calls = [{ arguments = { path = "x" } }]
`, []string{`test.toml:3:5: rule 1 reply 1 tool_calls[1]: name is missing`}, 3, 5},
		{"negative delay", `
[[rule]]
  [[rule.reply]]
  text = "x"
  chunk_delay_ms = -1
`, []string{`test.toml:5:3: rule 1 reply 1: chunk_delay_ms must not be negative`}, 5, 3},
		{"template syntax", `
[[rule]]
name = "t"
  [[rule.reply]]
  text = "{{.User"
`, []string{`test.toml:5:3: rule 1 "t" reply 1 text: bad template:`}, 5, 3},
		{"template unknown field", `
[[rule]]
  [[rule.reply]]
  text = "ok"
  reasoning = "{{if .ToolResult}}{{.Usr}}{{end}}"
`, []string{`test.toml:5:3: rule 1 reply 1 reasoning: bad template: unknown field .Usr`}, 5, 3},
		{"template unknown function", `
[[rule]]
  [[rule.reply]]
  text = "{{shout .User}}"
`, []string{`rule 1 reply 1 text: bad template:`, `"shout" not defined`}, 4, 3},
		{"no rules", `# nothing`, []string{`test.toml: the script has no rules`}, 0, 0},
		{"inline rules get the nearest position", `
rule = [{ name = "inline", reply = [] }]
`, []string{`test.toml: rule 1 "inline" has no reply`}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.toml", []byte(tc.src))
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			var le *LoadError
			require.ErrorAs(t, err, &le)
			require.Equal(t, "test.toml", le.File)
			if tc.line > 0 {
				require.Equal(t, tc.line, le.Line, "line of %v", le)
				if tc.col > 0 {
					require.Equal(t, tc.col, le.Column, "column of %v", le)
				}
			}
		})
	}
}

func TestLoadErrorsAreAllReported(t *testing.T) {
	_, err := Parse("x.toml", []byte(`
[[rule]]
match = "("
[[rule]]
  [[rule.reply]]
`))
	require.ErrorContains(t, err, "x.toml:3:1: rule 1: match is not a valid Go regexp")
	require.ErrorContains(t, err, "x.toml:2:3: rule 1 has no reply")
	require.ErrorContains(t, err, "x.toml:5:5: rule 2 reply 1 is empty")
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined))
	require.Len(t, joined.Unwrap(), 3)
}

// TestTogetherMeetsBeforeAnyGoesOn: with together = 2 the first call waits,
// however long, until a second call of the same reply comes; then both
// answer. A call left alone ends with its request.
func TestTogetherMeetsBeforeAnyGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustParse(t, "[[rule]]\n[[rule.reply]]\ntogether = 2\ntext = 'met'\n")
		first := make(chan result, 1)
		go func() { first <- generate(context.Background(), s, "m", user("a")) }()
		time.Sleep(time.Hour) // a fake hour: the first is still waiting
		synctest.Wait()
		require.Empty(t, first, "the first call answered alone")
		second := generate(context.Background(), s, "m", user("b"))
		require.NoError(t, second.err)
		require.Equal(t, "met", second.resp.Text)
		r := <-first
		require.NoError(t, r.err)
		require.Equal(t, "met", r.resp.Text)

		// The next group starts empty: a lone call waits until cancelled.
		ctx, cancel := context.WithCancel(context.Background())
		alone := make(chan result, 1)
		go func() { alone <- generate(ctx, s, "m", user("c")) }()
		synctest.Wait()
		require.Empty(t, alone)
		cancel()
		require.ErrorIs(t, (<-alone).err, context.Canceled)
		// It left the group: one more call still waits for a partner.
		ctx2, cancel2 := context.WithCancel(context.Background())
		defer cancel2()
		lone := make(chan result, 1)
		go func() { lone <- generate(ctx2, s, "m", user("d")) }()
		synctest.Wait()
		require.Empty(t, lone, "a cancelled caller still counted in the group")
		cancel2()
		<-lone
	})
}

func TestTogetherMustBeAGroup(t *testing.T) {
	for _, n := range []string{"1", "-2"} {
		_, err := Parse("t.toml", []byte("[[rule]]\n[[rule.reply]]\ntogether = "+n+"\ntext = 'x'\n"))
		require.ErrorContains(t, err, "together must be at least 2", n)
	}
}

// TestAScriptWithAByteOrderMark parses.
func TestAScriptWithAByteOrderMark(t *testing.T) {
	s, err := Parse("bom.toml", []byte("\ufeff[[rule]]\n  [[rule.reply]]\n  text = \"hi\"\n"))
	require.NoError(t, err)
	require.NotNil(t, s)
}
