package client

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/pixir-go/pixir/internal/plural"
)

// Renderer prints session/update notifications as an editor would show
// them: streamed text inline, thoughts dimmed, tool calls as status lines
// with their result.
type Renderer struct {
	mu     sync.Mutex
	w      io.Writer
	inText string // the kind of chunk being streamed on the current line
	titles map[string]string
}

// NewRenderer writes to w.
func NewRenderer(w io.Writer) *Renderer {
	return &Renderer{w: w, titles: map[string]string{}}
}

type update struct {
	SessionUpdate string `json:"sessionUpdate"`
	Content       json.RawMessage
	ToolCallID    string `json:"toolCallId"`
	Title         string `json:"title"`
	Kind          string `json:"kind"`
	Status        string `json:"status"`
	CurrentModeID string `json:"currentModeId"`
	Used, Size    int
}

type block struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Path    string `json:"path"`
	NewText string `json:"newText"`
	Content *block `json:"content"`
}

// Update renders one session/update's params.
func (r *Renderer) Update(params json.RawMessage) {
	var n struct {
		Update update `json:"update"`
	}
	if err := json.Unmarshal(params, &n); err != nil {
		return
	}
	u := n.Update
	r.mu.Lock()
	defer r.mu.Unlock()
	switch u.SessionUpdate {
	case "agent_message_chunk", "user_message_chunk", "agent_thought_chunk":
		var b block
		_ = json.Unmarshal(u.Content, &b)
		text := b.Text
		if b.Type != "text" {
			text = "[" + b.Type + "]"
		}
		if r.inText != u.SessionUpdate {
			r.endLine()
			fmt.Fprint(r.w, map[string]string{
				"user_message_chunk":  "you> ",
				"agent_thought_chunk": "  (thinking) ",
				"agent_message_chunk": "pixir> ",
			}[u.SessionUpdate])
			r.inText = u.SessionUpdate
		}
		fmt.Fprint(r.w, text)
	case "tool_call":
		r.titles[u.ToolCallID] = u.Title
		r.line(fmt.Sprintf("  ⚙ %s  [%s, %s]", u.Title, u.Kind, u.Status))
	case "tool_call_update":
		title := r.titles[u.ToolCallID]
		if u.Status == "" {
			return
		}
		mark := map[string]string{"in_progress": "…", "completed": "✓", "failed": "✗"}[u.Status]
		r.line(fmt.Sprintf("  %s %s  [%s]", mark, title, u.Status))
		var contents []block
		_ = json.Unmarshal(u.Content, &contents)
		for _, c := range contents {
			switch {
			case c.Type == "diff":
				r.indent(fmt.Sprintf("diff %s:\n%s", c.Path, c.NewText))
			case c.Content != nil:
				r.indent(c.Content.Text)
			}
		}
	case "current_mode_update":
		r.line("  mode → " + u.CurrentModeID)
	case "plan":
		r.line("  plan updated")
	}
}

// Println ends any streamed text and prints a line of its own.
func (r *Renderer) Println(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.line(s)
}

func (r *Renderer) line(s string) {
	r.endLine()
	fmt.Fprintln(r.w, s)
}

func (r *Renderer) endLine() {
	if r.inText != "" {
		fmt.Fprintln(r.w)
		r.inText = ""
	}
}

// indent prints tool output, shortened, under its tool call.
func (r *Renderer) indent(s string) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	const maxLines = 8
	if len(lines) > maxLines {
		lines = append(lines[:maxLines], "… "+plural.Of(len(lines)-maxLines, "more line", "more lines"))
	}
	for _, l := range lines {
		fmt.Fprintln(r.w, "      │ "+l)
	}
}
