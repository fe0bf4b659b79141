// Forks: a new session that starts with another's history (session/fork),
// and a Subagent that starts from its parent's context (spawn_agent's
// fork_context).

package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/pixir-go/pixir/runtime/provider"
)

// ForkSession makes a new session in workspace dir whose Log starts with
// the conversation of session id up to now: its messages, tool calls and
// results, re-stamped as the new session's, so that its History (and a
// provider's prompt cache) is the source's. The source's Subagents and
// workflow runs stay the source's: their events are not copied, though
// the conversation that spawned them is (and what the model was told of
// their ends); so does what the source spent. A call the source is running has
// no result yet; in the fork it is answered as interrupted, as after a
// crash. The source is read, never changed, and may be open elsewhere.
func (r *Runtime) ForkSession(id, dir string, opts ...SessionOption) (*Session, LoadReport, error) {
	if !ValidSessionID(id) {
		return nil, LoadReport{}, fmt.Errorf("%w: %q is not a session id", ErrSessionNotFound, id)
	}
	src, meta, err := r.storedLog(id, dir)
	if err != nil {
		return nil, LoadReport{}, err
	}
	events, _, err := ReadLog(src)
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("reading the session to fork: %w", err)
	}
	ws, err := NewWorkspace(dir)
	if err != nil {
		return nil, LoadReport{}, err
	}
	root := ws.Root()
	ws.Close()
	if err := EnsureStateDir(root); err != nil {
		return nil, LoadReport{}, err
	}
	fork := newSessionID()
	log, err := CreateLog(logPath(root, fork))
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("creating the fork's log: %w", err)
	}
	// The correction of the token estimate the source's provider counts
	// made is the fork's too (its requests are the source's conversation),
	// folded as a session opened again folds it (historyFold.calib).
	calib := &historyFold{log: r.log}
	for _, ev := range events {
		switch ev.Type {
		case EventSubagent, EventWorkflow:
			continue // the source's children and runs stay the source's
		case EventProviderUsage:
			calib.add(ev)
			continue // what the source spent is not the fork's
		case EventNotice:
			calib.add(ev) // the source is a fork: the correction it started from
		}
		ev.SessionID, ev.ID, ev.Seq = fork, "", 0
		if err := log.Append(&ev); err != nil {
			log.Close()
			_ = os.Remove(logPath(root, fork))
			return nil, LoadReport{}, fmt.Errorf("writing the fork's log: %w", err)
		}
	}
	// A fork is a new line of work: what the user allowed always was for
	// the source session (as Claude Code and Codex scope it), and the
	// fork asks again. The notice says where it came from, and History's
	// fold forgets the grants before it.
	raw, _, err := encodeEventData(NoticeData{Source: "fork", Severity: "info", Title: "Forked from session " + id,
		Detail:          "This session starts with that session's conversation up to the fork. Its answers \"always allow\" stay with it: this session asks again.",
		TokenCorrection: calib.calib})
	if err == nil {
		err = log.Append(&Event{SessionID: fork, Type: EventNotice, Data: raw})
	}
	if err != nil {
		log.Close()
		_ = os.Remove(logPath(root, fork))
		return nil, LoadReport{}, fmt.Errorf("writing the fork's log: %w", err)
	}
	err = errors.Join(log.Sync(), log.Close())
	now := time.Now().UTC()
	meta.ID, meta.Workspace, meta.ParentID, meta.Depth, meta.CreatedAt, meta.UpdatedAt = fork, root, "", 0, now, now
	// The source's count is of the source's Log: the fork's is written
	// anew (usage and Subagent events dropped, renumbered), so its turns
	// are counted from the Log until its own first turn saves a count.
	meta.Count = nil
	if err == nil {
		err = writeMeta(meta)
	}
	if err != nil {
		_ = os.Remove(logPath(root, fork))
		return nil, LoadReport{}, fmt.Errorf("writing the fork: %w", err)
	}
	r.rememberWorkspace(root)
	return r.OpenSession(fork, root, nil, opts...)
}

// storedLog finds the Log of session id: live in this process, in
// workspace dir, or in a workspace this Pixir home has seen; with its
// metadata (rebuilt when missing).
func (r *Runtime) storedLog(id, dir string) (string, Meta, error) {
	if s, err := r.Session(id); err == nil {
		return s.log.Path(), s.Meta(), nil
	}
	candidates := r.knownWorkspaces()
	if ws, err := NewWorkspace(dir); err == nil {
		candidates = append([]string{ws.Root()}, candidates...)
		ws.Close()
	}
	for _, w := range candidates {
		path := logPath(w, id)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		meta, err := readMeta(w, id)
		if err != nil {
			meta = Meta{ID: id, Workspace: w, Mode: ModeAuto, Model: r.cfg.Model}
		}
		return path, meta, nil
	}
	return "", Meta{}, fmt.Errorf("%w: no stored session %s in %s or any workspace this Pixir home has seen", ErrSessionNotFound, id, dir)
}

// forkedHistory is the parent's History for a child spawned with
// fork_context: what the parent's model had seen before the call that
// spawns it. The model response that holds that call (and its sibling
// calls) is left out: its calls have no results yet, and a model API
// refuses a conversation in which a call has none.
func (s *Session) forkedHistory() []provider.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := slices.Clone(s.history)
	if h == nil {
		h = []provider.Message{} // a fork of nothing is still a fork
	}
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == provider.RoleAssistant && len(h[i].ToolCalls) > 0 {
			answered := 0
			for _, m := range h[i+1:] {
				if m.Role == provider.RoleTool {
					answered++
				}
			}
			if answered < len(h[i].ToolCalls) {
				return h[:i]
			}
			break
		}
	}
	return h
}

// startFrom makes a new Subagent's session start with history (its
// parent's, forked), before its first prompt. Its Log records where the
// history came from (a notice naming the parent's session and how many
// messages); the parent's Log holds the messages themselves.
func (s *Session) startFrom(history []provider.Message) error {
	s.mu.Lock()
	s.history = append(history[:len(history):len(history)], s.history...)
	s.mu.Unlock()
	detail := fmt.Sprintf("This subagent's conversation starts with %d messages of its parent's session %s (spawn_agent with fork_context), then its task.",
		len(history), s.parent.ID())
	return s.emit(nil, EventNotice, NoticeData{Source: "fork", Severity: "info", Title: "Started from a fork of its parent's conversation", Detail: detail})
}
