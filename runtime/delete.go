// Deleting a stored session: its Log, its metadata, and the folders of its
// Subagents (their Logs and workspace snapshots).

package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrSessionRunning refuses to delete a session that is working.
var ErrSessionRunning = errors.New("the session is running")

// DeleteSession removes a stored session for good: its Log and metadata,
// and each of its Subagents' folders under .pixir/subagents/ (their own
// Logs and snapshots, and so on down its descendants). A session with a
// turn or a Subagent running is refused with ErrSessionRunning (cancel it
// first); a session another process has open, with ErrSessionInUse. A live
// session that is idle is closed first.
func (r *Runtime) DeleteSession(id string) error {
	if !ValidSessionID(id) {
		return fmt.Errorf("%w: %q is not a session id", ErrSessionNotFound, id)
	}
	var root string
	r.mu.Lock()
	s, live := r.sessions[id]
	r.mu.Unlock()
	if live {
		s.mu.Lock()
		running := s.turnCancel != nil
		s.mu.Unlock()
		if running || r.subagents.hasLiveChildren(id) {
			return fmt.Errorf("%w: %s has a turn or a subagent running; cancel it (session/cancel) and delete it once it has stopped", ErrSessionRunning, id)
		}
		root = s.workspace.Root()
		if err := r.CloseSession(id); err != nil {
			return err
		}
	} else {
		for _, w := range r.knownWorkspaces() {
			if _, err := os.Stat(logPath(w, id)); err == nil {
				root = w
				break
			}
		}
	}
	if root == "" {
		return fmt.Errorf("%w: no stored session %s in any workspace this Pixir home has seen", ErrSessionNotFound, id)
	}
	path := logPath(root, id)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: no log for %s in %s", ErrSessionNotFound, id, root)
	}
	if err != nil {
		return fmt.Errorf("opening the session's log: %w", err)
	}
	defer f.Close()
	// Held until the Log is gone: no other process opens it meanwhile.
	if err := lockLog(f, path); err != nil {
		return err
	}
	if err := removeChildren(path, root); err != nil {
		return err
	}
	if err := os.Remove(metaPath(root, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the session's metadata: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing the session's log: %w", err)
	}
	return nil
}

// removeChildren removes the folders of the Subagents a Log records, whose
// session worked in workspace: each child's own children first (they live
// under the child's workspace, which is this one for a shared child).
func removeChildren(logFile, workspace string) error {
	children := map[string]string{} // subagent id → its workspace
	var order []string
	_, err := ScanLog(logFile, func(ev Event) {
		if ev.Type != EventSubagent {
			return
		}
		var d SubagentEventData
		if json.Unmarshal(ev.Data, &d) != nil || !ValidSessionID(d.SubagentID) {
			return
		}
		if _, seen := children[d.SubagentID]; !seen {
			order = append(order, d.SubagentID)
		}
		children[d.SubagentID] = d.Workspace
	})
	if err != nil {
		return fmt.Errorf("reading %s for its subagents: %w", logFile, err)
	}
	for _, sid := range order {
		home := filepath.Join(workspace, StateDir, "subagents", sid)
		logs, _ := filepath.Glob(filepath.Join(home, "*.ndjson"))
		for _, l := range logs {
			if w := children[sid]; w != "" {
				if err := removeChildren(l, w); err != nil {
					return err
				}
			}
		}
		if err := os.RemoveAll(home); err != nil {
			return fmt.Errorf("removing subagent %s's folder: %w", sid, err)
		}
	}
	return nil
}
