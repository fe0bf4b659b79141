package inspect

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// Widths of the shortened texts in the tree.
const (
	messageWidth = 100
	lineWidth    = 120
)

// RenderOptions shape the text tree.
type RenderOptions struct {
	// Location is the time zone times are shown in (default UTC).
	Location *time.Location
}

// node is one line of the tree, the notes printed under it, and its
// children.
type node struct {
	text     string
	notes    []string
	children []*node
}

func (n *node) note(format string, args ...any) {
	n.notes = append(n.notes, fmt.Sprintf(format, args...))
}

// Render writes the tree a person reads: the session, then each turn with
// its messages and tool calls, and under a call the Subagents it spawned
// and the Workflows it ran, with their steps.
func Render(w io.Writer, s *Session, opt RenderOptions) error {
	loc := opt.Location
	if loc == nil {
		loc = time.UTC
	}
	bw := bufio.NewWriter(w)
	title := s.Title
	if title == "" {
		title = "(untitled)"
	}
	fmt.Fprintf(bw, "session %s: %s\n", s.SessionID, title)
	if s.Workspace != "" {
		fmt.Fprintf(bw, "  workspace %s\n", s.Workspace)
	}
	if s.Log != "" {
		fmt.Fprintf(bw, "  log %s (%s)\n", s.Log, plural.Of(s.Load.Events, "event", "events"))
	}
	var facts []string
	if s.Mode != "" {
		facts = append(facts, "mode "+s.Mode)
	}
	if s.Model != "" {
		facts = append(facts, "model "+s.Model)
	}
	if s.CreatedAt != nil {
		facts = append(facts, "created "+s.CreatedAt.In(loc).Format(time.DateTime))
	}
	if s.UpdatedAt != nil {
		facts = append(facts, "updated "+s.UpdatedAt.In(loc).Format(time.DateTime))
	}
	if len(facts) > 0 {
		fmt.Fprintf(bw, "  %s\n", strings.Join(facts, " · "))
	}
	if !s.Usage.IsZero() {
		fmt.Fprintf(bw, "  usage %s\n", s.Usage)
	}
	for _, warning := range LoadWarnings(s.Load) {
		fmt.Fprintf(bw, "  warning: %s\n", warning)
	}
	var roots []*node
	for _, t := range s.Turns {
		roots = append(roots, turnNode(t, loc))
	}
	if len(s.Subagents) > 0 || len(s.Workflows) > 0 {
		outside := &node{text: "outside any turn"}
		for _, wf := range s.Workflows {
			outside.children = append(outside.children, workflowNode(wf, loc))
		}
		for _, sa := range s.Subagents {
			outside.children = append(outside.children, subagentNode(sa))
		}
		roots = append(roots, outside)
	}
	if len(roots) == 0 {
		fmt.Fprintln(bw, "\n(no turns, Subagents or Workflows in the Log)")
	}
	for _, r := range roots {
		fmt.Fprintln(bw)
		writeNode(bw, r, "", "", "")
	}
	return bw.Flush()
}

// LoadWarnings says what reading the Log left out, a sentence each.
func LoadWarnings(l LoadInfo) []string {
	var out []string
	if l.TornBytes > 0 {
		out = append(out, fmt.Sprintf("the Log's last line is torn (%d bytes, cut off mid-write by a crash); it is left out", l.TornBytes))
	}
	if n := l.SkippedLines; n > 0 {
		out = append(out, plural.Of(n, "line", "lines")+" of the Log "+plural.Word(n, "is not an event; it is", "are not events; they are")+" left out")
	}
	if n := l.UndecodedEvents; n > 0 {
		out = append(out, plural.Of(n, "event", "events")+" this Pixir cannot read (data that does not decode, or a type it does not know); "+plural.Word(n, "it is", "they are")+" left out")
	}
	return out
}

// writeNode prints n after lead (its connector), its notes and its
// children under prefix.
func writeNode(w io.Writer, n *node, prefix, lead, cont string) {
	fmt.Fprintf(w, "%s%s%s\n", prefix, lead, n.text)
	bar := "   "
	if len(n.children) > 0 {
		bar = "│  "
	}
	for _, note := range n.notes {
		fmt.Fprintf(w, "%s%s%s%s\n", prefix, cont, bar, note)
	}
	for i, c := range n.children {
		if i == len(n.children)-1 {
			writeNode(w, c, prefix+cont, "└─ ", "   ")
		} else {
			writeNode(w, c, prefix+cont, "├─ ", "│  ")
		}
	}
}

func turnNode(t *Turn, loc *time.Location) *node {
	n := &node{}
	// Before the first prompt, notices alone (a pixir run --workflow
	// session's budget warning, an MCP server that did not start) are no
	// turn of the model's: no status, and no note that it did not end.
	noTurn := t.Index == 0 && !slices.ContainsFunc(t.Items, func(it *Item) bool { return it.Kind != KindNotice })
	switch {
	case noTurn:
		n.text = "before the first prompt"
	case t.Index == 0:
		n.text = fmt.Sprintf("before the first prompt [%s]", t.Status)
	default:
		n.text = fmt.Sprintf("turn %d [%s] %s: %s", t.Index, t.Status, t.TS.In(loc).Format(time.DateTime), oneLine(t.Prompt, messageWidth))
	}
	switch {
	case t.Status == TurnIncomplete && !noTurn:
		n.note("no final answer in the Log: still running, or the process ended (a Log written before 2026-11-25 kept no stop: cancelled between model calls, or stopped at the model-call limit)")
	case t.StopReason != "":
		n.note("stopped: %s", stopText(t.StopReason))
	}
	if t.Usage != nil {
		n.note("usage: %s", t.Usage)
	}
	for _, it := range t.Items {
		switch it.Kind {
		case KindAssistantMessage:
			m := it.Message
			if m.Text == "" && !m.Partial {
				continue
			}
			label := "assistant"
			if m.Partial {
				label = "assistant (cut off)"
			}
			n.children = append(n.children, &node{text: label + ": " + oneLine(m.Text, messageWidth)})
		case KindToolCall:
			n.children = append(n.children, toolNode(it.ToolCall, loc))
		case KindTurnFailed:
			n.children = append(n.children, &node{text: "turn failed: " + failure(it.Error)})
		case KindPermissionDecision:
			p := it.Permission
			n.children = append(n.children, &node{text: fmt.Sprintf("permission for %s %s: %s", p.Tool, p.ToolCallID, permission(p))})
		case KindNotice:
			n.children = append(n.children, noticeNode(it.Notice))
		case KindSummaries:
			n.children = append(n.children, &node{text: "told the model how subagents it did not wait for ended: " + strings.Join(it.SubagentIDs, ", ")})
		case KindCompaction:
			c := it.Compaction
			n.children = append(n.children, &node{text: fmt.Sprintf("compacted (%s, by the %s): %d messages summarized, %d kept; about %s → %s tokens of a %s window",
				c.Reason, c.Method, c.Replaced, c.Kept, budget.Count(c.TokensBefore), budget.Count(c.TokensAfter), budget.Count(int64(c.Window)))})
		}
	}
	return n
}

// stopText says why a turn stopped, from its ACP stop reason.
func stopText(reason string) string {
	switch runtime.StopReason(reason) {
	case runtime.StopCancelled:
		return "cancelled"
	case runtime.StopMaxTurnRequests:
		return "at the limit of model calls per turn (max_turn_requests)"
	case runtime.StopMaxTokens:
		return "at a token limit: a spent budget, or an answer cut off (max_tokens)"
	}
	return reason
}

func toolNode(tc *ToolCall, loc *time.Location) *node {
	status := tc.Status
	if tc.Error != nil {
		status += ": " + tc.Error.Kind
	}
	parts := []string{fmt.Sprintf("%s %s [%s]", tc.Name, tc.ToolCallID, status)}
	if tc.Status != ToolUnfinished {
		parts = append(parts, elapsed(tc.ElapsedMS))
	}
	if tc.Title != "" && tc.Title != tc.Name {
		parts = append(parts, oneLine(tc.Title, 80))
	}
	if tc.Permission != nil {
		parts = append(parts, permission(tc.Permission))
	}
	n := &node{text: strings.Join(parts, " · ")}
	if tc.Status == ToolUnfinished {
		n.note("no result in the Log: still running, or the process ended")
	}
	if tc.Error != nil {
		n.note("error: %s", oneLine(tc.Error.Message, lineWidth))
	}
	if p := tc.Permission; p != nil && p.Reason != "" && (tc.Error == nil || tc.Error.Message != p.Reason) {
		n.note("permission: %s", oneLine(p.Reason, lineWidth))
	}
	for _, wf := range tc.Workflows {
		n.children = append(n.children, workflowNode(wf, loc))
	}
	for _, sa := range tc.Subagents {
		n.children = append(n.children, subagentNode(sa))
	}
	return n
}

// permission says who decided a call's permission: the mode, the user
// (asked now, or earlier with allow_always), the read-only sandbox, or the
// call being a dry run.
func permission(p *Permission) string {
	switch p.Source {
	case "remembered":
		return p.Decision + " by the user before (" + p.Option + ", remembered)"
	case "sandbox":
		return p.Decision + " in the read-only sandbox"
	case "dry_run":
		return p.Decision + " as a dry run"
	}
	s := p.Decision + " by " + p.Source
	if p.Source == "mode" {
		s += " " + p.Mode
	}
	if p.Option != "" {
		s += " (" + p.Option + ")"
	}
	return s
}

func subagentNode(sa *Subagent) *node {
	status := string(sa.Status)
	if !sa.Ended() {
		status += ", no end in the Log"
	}
	text := fmt.Sprintf("subagent %s %s [%s] %s", sa.SubagentID, sa.Agent, status, elapsed(sa.ElapsedMS))
	if t := firstLine(sa.Task, 80); t != "" {
		text += " · " + t
	}
	n := &node{text: text}
	if sa.Summary != "" {
		n.note("summary: %s", firstLine(sa.Summary, lineWidth))
	}
	if sa.Error != nil {
		n.note("error: %s", oneLine(failure(sa.Error), lineWidth))
	}
	if sa.Inputs > 0 {
		n.note("inputs: %d", sa.Inputs)
	}
	if sa.Usage != nil {
		n.note("usage: %s", sa.Usage)
	}
	if sa.ChildLog != "" {
		n.note("log: %s", sa.ChildLog)
	}
	return n
}

func workflowNode(wf *Workflow, loc *time.Location) *node {
	status := string(wf.Status)
	if status == "" {
		status = "unknown"
	}
	switch wf.StoppedBy {
	case "":
	case workflows.StoppedInterrupted:
		status += ", interrupted"
	default:
		status += ", stopped by " + wf.StoppedBy
	}
	text := "workflow " + wf.WorkflowID
	if wf.Name != "" {
		text += fmt.Sprintf(" %q", wf.Name)
	}
	// Counted as the outcome's verdict line counts.
	text += fmt.Sprintf(" [%s] %s", status, wf.Summary.Brief())
	if wf.StoppedBy != workflows.StoppedInterrupted {
		text += " · " + elapsed(wf.ElapsedMS)
	}
	if !wf.Usage.IsZero() {
		text += " · " + budget.Count(wf.Usage.Tokens()) + " tokens"
	}
	n := &node{text: text}
	if wf.StoppedBy == workflows.StoppedInterrupted {
		n.note("no end of the run in the Log: its process ended mid-run (or it is still running); running steps are shown detached")
	}
	for i := range wf.Loops {
		l := &wf.Loops[i]
		text := "loop " + l.Run + ": " + workflows.LoopStateText(l)
		if l.Superseded {
			text += " (earlier iteration)"
		}
		if l.Unresolved() && len(l.Blockers) > 0 {
			text += "; blockers: " + strings.Join(l.Blockers, "; ")
		}
		n.note("%s", oneLine(text, lineWidth))
	}
	for _, l := range workflows.CommitLines(wf.Commit, wf.Commits) {
		n.note("%s", oneLine(l, lineWidth))
	}
	if len(wf.Uncommitted) > 0 {
		n.note("%s", oneLine(workflows.UncommittedLine(wf.Uncommitted), lineWidth))
	}
	for _, st := range wf.Steps {
		n.children = append(n.children, stepNode(st, loc))
	}
	return n
}

func stepNode(st *Step, loc *time.Location) *node {
	label := st.Run
	if label == "" {
		label = st.StepID
	}
	parts := []string{fmt.Sprintf("step %s %s", label, st.Agent)}
	if st.Wave > 0 {
		parts[0] += fmt.Sprintf(" wave %d", st.Wave)
	}
	parts[0] += fmt.Sprintf(" [%s]", st.CheckpointStatus)
	parts = append(parts, "subagent "+string(st.SubagentStatus))
	if st.SubagentStatus != tools.SubagentNotStarted {
		parts = append(parts, elapsed(st.ElapsedMS))
	}
	if st.Usage != nil {
		parts = append(parts, budget.Count(st.Usage.Tokens())+" tokens")
	}
	n := &node{text: strings.Join(parts, " · ")}
	switch {
	case st.HeldReason != "" && len(st.BlockedBy) > 0:
		n.note("held: %s (blocked by %s)", st.HeldReason, strings.Join(st.BlockedBy, ", "))
	case st.HeldReason != "":
		n.note("held: %s", st.HeldReason)
	case st.SkipReason != "":
		n.note("%s", firstLine(st.SkipReason, lineWidth))
	case st.Summary != "":
		n.note("summary: %s", firstLine(st.Summary, lineWidth))
	}
	if st.Reason != "" {
		n.note("stopped by the workflow: %s", st.Reason)
	}
	if st.Error != nil {
		n.note("error: %s", oneLine(failure(st.Error), lineWidth))
	}
	if st.ReusedFrom != "" {
		n.note("reused from %s", st.ReusedFrom)
	}
	if st.Superseded {
		n.note("an earlier iteration: a later one counts")
	}
	if m := st.Merge; m != nil {
		text := "merge: " + m.Brief()
		if m.Reason != "" {
			text += ": " + m.Reason
		}
		n.note("%s", oneLine(text, lineWidth))
		for _, c := range m.Conflicts {
			n.note("conflict: %s", oneLine(c.Path+" ("+c.Kind+"): "+c.Message, lineWidth))
		}
	}
	unmerged := st.Merge != nil && st.Merge.Status != tools.MergeMerged || st.Merge == nil && st.SubagentStatus == tools.SubagentDetached
	later := st.MergedLater
	if later != nil && unmerged && later.Status != tools.MergeMerged {
		// Where the work is now: the run's own merge is not the last word.
		n.note("merge_agent %s at %s: %s (%s merged, %s conflicting)", later.ToolCallID, later.TS.In(loc).Format(time.DateTime), later.Status,
			plural.Of(later.Files, "file", "files"), plural.Of(later.Conflicts, "file", "files"))
	}
	switch {
	case st.WorkspaceMode != string(workflows.Isolated) || st.Workspace == "" || !unmerged:
	case later != nil && later.Status == tools.MergeMerged:
		n.note("its work merged into the workspace since: merge_agent %s at %s (%s)", later.ToolCallID, later.TS.In(loc).Format(time.DateTime),
			plural.Of(later.Files, "file", "files"))
	case st.SnapshotDeleted:
		// Not a folder that is gone.
		n.note("snapshot deleted when the subagent was closed, with its work not merged into the workspace")
	case st.SnapshotRemoved:
		n.note("snapshot removed since (by pixir gc, or by hand), with its work not merged into the workspace: the work is gone")
	default:
		// What `pixir run` sends the user here for: the work that is
		// in the step's snapshot and nowhere else.
		n.note("snapshot (its work not merged into the workspace): %s", st.Workspace)
	}
	if st.SubagentID != "" {
		child := "subagent " + st.SubagentID
		if st.ChildLog != "" {
			child += " · log " + st.ChildLog
		}
		n.note("%s", child)
	}
	return n
}

func failure(f *Failure) string {
	if f.Kind == "" {
		return f.Message
	}
	return f.Kind + ": " + f.Message
}

// elapsed shows milliseconds as a person reads them.
func elapsed(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

// oneLine is s with every run of white space made one space, cut to n
// characters with "…".
func oneLine(s string, n int) string {
	return cut(strings.Join(strings.Fields(s), " "), n)
}

// firstLine is the first non-empty line of s, cut to n characters, with
// "…" when more follows.
func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	line, rest, more := strings.Cut(s, "\n")
	line = oneLine(line, n)
	if more && strings.TrimSpace(rest) != "" && !strings.HasSuffix(line, "…") {
		line += " …"
	}
	return line
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// RenderList writes the table of `pixir sessions`.
func RenderList(w io.Writer, list []Listed, loc *time.Location) error {
	if loc == nil {
		loc = time.UTC
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	ids := make([]string, len(list))
	for i, l := range list {
		ids[i] = l.ID
	}
	short := ShortIDs(ids) // what to type: pixir resume and inspect take any unique start
	fmt.Fprintln(tw, "ID\tUPDATED\tMODE\tTURNS\tTITLE")
	for _, l := range list {
		updated, turns, mode := "-", "?", string(l.Mode)
		if !l.UpdatedAt.IsZero() {
			updated = l.UpdatedAt.In(loc).Format("2006-01-02 15:04")
		}
		if l.Turns >= 0 {
			turns = fmt.Sprint(l.Turns)
		}
		if l.LastStopReason != "" {
			turns += " (last: " + l.LastStopReason + ")"
		}
		if mode == "" {
			mode = "-"
		}
		title := oneLine(l.Title, 80)
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", short[l.ID], updated, mode, turns, title)
	}
	return tw.Flush()
}

// noticeDetailLines is how many lines of a notice's detail (a stopped MCP
// server's stderr, its end) are shown under it.
const noticeDetailLines = 5

// noticeNode is a notice: its title, and under it the last lines of its
// detail that the title does not already say.
func noticeNode(nd *runtime.NoticeData) *node {
	n := &node{text: fmt.Sprintf("notice (%s): %s", nd.Severity, oneLine(nd.Title, messageWidth))}
	var lines []string
	for line := range strings.SplitSeq(nd.Detail, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(nd.Title, line) {
			lines = append(lines, line)
		}
	}
	if len(lines) > noticeDetailLines {
		n.note("… %d earlier lines", len(lines)-noticeDetailLines)
		lines = lines[len(lines)-noticeDetailLines:]
	}
	for _, line := range lines {
		n.note("%s", oneLine(line, messageWidth))
	}
	return n
}
