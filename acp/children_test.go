package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
)

// lockedBuffer is what the connection writes, read once it is done.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// A native child's first prompt shown to the client is its task, unless
// send_input gave its first run another one (a child cancelled while
// queued); the connection keeps a task only until the child's started
// event, and never a replayed child's.
func TestAChildsTaskIsKeptOnlyUntilItsFirstPrompt(t *testing.T) {
	s := NewServer(nil, Options{})
	in, input := io.Pipe()
	var out lockedBuffer
	conn := s.Serve(in, &out, in.Close)
	live := &presenter{s: s, ctx: context.Background(), sessionID: "parent", native: true}
	event := func(p *presenter, child string, ev tools.SubagentEvent, task, input string) {
		p.subagentNative(runtime.SubagentEventData{Event: ev, SubagentID: "sa-" + child, ChildSessionID: child,
			Agent: "default", Task: task, Input: input}, 1)
	}
	kept := func(child string) string {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.children[child].task
	}

	event(live, "ran", tools.SubagentEventQueued, "THE TASK", "")
	require.Equal(t, "THE TASK", kept("ran"), "kept until the child starts")
	event(live, "ran", tools.SubagentEventStarted, "", "")
	require.Empty(t, kept("ran"), "not kept once given out")

	event(live, "resent", tools.SubagentEventQueued, "ANOTHER TASK", "")
	event(live, "resent", tools.SubagentEventCancelled, "", "")
	event(live, "resent", tools.SubagentEventQueued, "", "THE MESSAGE")
	event(live, "resent", tools.SubagentEventStarted, "", "THE MESSAGE")
	require.Empty(t, kept("resent"))

	replay := &presenter{s: s, ctx: context.Background(), sessionID: "parent", native: true, replaying: true}
	event(replay, "replayed", tools.SubagentEventQueued, "AN OLD TASK", "")
	require.Empty(t, kept("replayed"), "a replayed child's task is not kept")

	require.NoError(t, input.Close())
	<-conn.Done()
	prompts := map[string][]string{}
	lines := bufio.NewScanner(bytes.NewReader(out.buf.Bytes()))
	for lines.Scan() {
		var n struct {
			Params struct {
				SessionID string `json:"sessionId"`
				Update    struct {
					SessionUpdate string          `json:"sessionUpdate"`
					Content       json.RawMessage `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &n))
		if n.Params.Update.SessionUpdate == "user_message_chunk" {
			var text ContentBlock
			require.NoError(t, json.Unmarshal(n.Params.Update.Content, &text))
			prompts[n.Params.SessionID] = append(prompts[n.Params.SessionID], text.Text)
		}
	}
	require.Equal(t, map[string][]string{"ran": {"THE TASK"}, "resent": {"THE MESSAGE"}}, prompts)
}

// A session loaded again on the connection that saw its children live
// (an editor reopening a tab) has each child announced again in the
// replay: the client shows the replay from nothing.
func TestAReplayAnnouncesChildrenTheConnectionKnows(t *testing.T) {
	s := NewServer(nil, Options{})
	in, input := io.Pipe()
	var out lockedBuffer
	conn := s.Serve(in, &out, in.Close)
	queued := runtime.SubagentEventData{Event: tools.SubagentEventQueued, SubagentID: "sa-1", ChildSessionID: "child",
		Agent: "default", Task: "the task", Workspace: "/w", ParentToolCallID: "call_1"}
	live := &presenter{s: s, ctx: context.Background(), sessionID: "parent", native: true}
	live.subagentNative(queued, 1)
	replay := &presenter{s: s, ctx: context.Background(), sessionID: "parent", native: true, replaying: true}
	replay.subagentNative(queued, 1)
	replay.subagentNative(runtime.SubagentEventData{Event: tools.SubagentEventStarted, SubagentID: "sa-1", ChildSessionID: "child", Agent: "default"}, 2)
	require.NoError(t, input.Close())
	<-conn.Done()

	var announces, links int
	lines := bufio.NewScanner(bytes.NewReader(out.buf.Bytes()))
	for lines.Scan() {
		var n struct {
			Params struct {
				Update map[string]any `json:"update"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &n))
		u := n.Params.Update
		switch {
		case u["sessionUpdate"] == "subagent_update" && u["title"] != nil:
			announces++
			require.Equal(t, "default: the task", u["title"])
			require.Equal(t, "/w", u["cwd"])
			require.NotNil(t, u["capabilities"])
		case u["sessionUpdate"] == "tool_call_update":
			links++
		}
	}
	require.Equal(t, 2, announces, "announced live, and again in the replay (once)")
	require.Equal(t, 2, links, "the spawn call linked live, and again in the replay")
}
