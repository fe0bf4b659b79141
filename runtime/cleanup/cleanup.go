// Package cleanup removes what Pixir keeps in a workspace's .pixir/ once it
// is old: the Logs of sessions and the folders of Subagents (their
// snapshots, bases and Logs) nothing has written to for a while (pixir gc).
//
// Age is the rule, because it is the one that is safe without asking a
// running process: a session in use writes its Log, and a child in use
// writes its own. A session open in a process that has been idle for
// longer is known by the lock on its Log, and kept. The snapshots of closed children and of closed sessions'
// children are removed when they close (close_agent, session/close);
// what is left is the work of sessions that were never closed (pixir run,
// an editor that went away), which stays as evidence until it is old.
package cleanup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pixir-go/pixir/runtime/snapshot"
)

// Kinds of Item.
const (
	// KindSessionLog is a session's Log, .pixir/sessions/<id>.ndjson, with
	// its metadata (<id>.json), or metadata whose Log is gone.
	KindSessionLog = "session_log"
	// KindSubagent is a Subagent's folder, .pixir/subagents/<id>/: its
	// snapshot, the snapshot's base and its Log.
	KindSubagent = "subagent"
)

// Item is one thing removed (or, in a dry run, to be removed).
type Item struct {
	Kind string `json:"kind"`
	// Path is workspace-relative, slash-separated.
	Path string `json:"path"`
	// Bytes is the room it takes on disk (its files' and folders' blocks,
	// as du counts them): what removing it frees.
	Bytes int64 `json:"bytes"`
	// LastWrite is when anything in it was last written.
	LastWrite time.Time `json:"last_write"`
}

// Report is what a collection did.
type Report struct {
	Workspace string `json:"workspace"`
	DryRun    bool   `json:"dry_run,omitempty"`
	// OlderThanMS is the age (ms) from which things are removed.
	OlderThanMS int64  `json:"older_than_ms"`
	Removed     []Item `json:"removed"`
	// Freed is the bytes removed (or to be removed).
	Freed int64 `json:"freed_bytes"`
	// Kept counts what is younger and stays.
	Kept int `json:"kept"`
	// InUse counts the old session Logs and Subagent folders that stay
	// because a process has their session open (an editor's session idle
	// for longer than the age, a child it ran days ago, that child's
	// children).
	InUse int `json:"in_use,omitempty"`
	// Errors are the items that could not be removed, and why.
	Errors []string `json:"errors,omitempty"`
}

// Collect removes, from root's .pixir/, the session Logs and Subagent
// folders nothing wrote to for olderThan before now; with dryRun it only
// reports them.
func Collect(root string, olderThan time.Duration, now time.Time, dryRun bool) (Report, error) {
	return CollectEach(root, olderThan, now, dryRun, nil)
}

// CollectEach is Collect calling removed (when not nil) with each item
// once it is removed, as it goes: removing a workflow's snapshots can take
// minutes, and a caller can say what is done meanwhile. A dry run calls it
// for none.
func CollectEach(root string, olderThan time.Duration, now time.Time, dryRun bool, removed func(Item)) (Report, error) {
	rep := Report{Workspace: root, DryRun: dryRun, OlderThanMS: olderThan.Milliseconds(), Removed: []Item{}}
	if olderThan < 0 {
		return rep, errors.New("the age must not be negative")
	}
	state := filepath.Join(root, snapshot.StateDir)
	cutoff := now.Add(-olderThan)

	sessions, err := readDir(filepath.Join(state, "sessions"))
	if err != nil {
		return rep, err
	}
	logs := map[string]bool{}
	var openLogs, youngLogs []string // Logs of sessions a process has open; Logs written within the age
	for _, e := range sessions {
		if id, ok := strings.CutSuffix(e.Name(), ".ndjson"); ok && e.Type().IsRegular() {
			logs[id] = true
		}
	}
	for _, e := range sessions {
		if !e.Type().IsRegular() {
			continue
		}
		// A session is its Log and its metadata (<id>.json): they go
		// together, as old as the later of the two. Metadata whose Log is
		// gone (removed by a gc before the two went together) goes alone.
		id, isLog := strings.CutSuffix(e.Name(), ".ndjson")
		if !isLog {
			if meta, ok := strings.CutSuffix(e.Name(), ".json"); !ok || logs[meta] {
				continue
			}
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		it := Item{Kind: KindSessionLog, Path: "sessions/" + e.Name(), Bytes: diskBytes(fi), LastWrite: fi.ModTime()}
		if isLog {
			if mi, err := os.Lstat(filepath.Join(state, "sessions", id+".json")); err == nil && mi.Mode().IsRegular() {
				it.Bytes += diskBytes(mi)
				if mi.ModTime().After(it.LastWrite) {
					it.LastWrite = mi.ModTime()
				}
			}
			// An open session writes its Log only when something
			// happens: one idle for longer than the age is still in
			// use, and its later turns would go to a removed file.
			// Only a Log gc may remove is tried here: a session/load or
			// pixir resume of a young one never meets gc's lock.
			logPath := filepath.Join(state, "sessions", e.Name())
			if it.LastWrite.After(cutoff) {
				youngLogs = append(youngLogs, logPath)
			} else {
				release, idle := lockLog(logPath)
				if !idle {
					openLogs = append(openLogs, logPath)
					rep.InUse++
					continue
				}
				release()
			}
		}
		rep.consider(it, cutoff)
	}
	children, err := readDir(filepath.Join(state, "subagents"))
	if err != nil {
		return rep, err
	}
	folders := map[string]Item{} // the old Subagent folders: what gc may remove
	for _, e := range children {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(state, "subagents", e.Name())
		last, bytes := lastWrite(dir)
		it := Item{Kind: KindSubagent, Path: "subagents/" + e.Name(), Bytes: bytes, LastWrite: last}
		if last.After(cutoff) {
			rep.consider(it, cutoff)
			continue
		}
		folders[e.Name()] = it
	}
	// An open session's children are its own to go on with (send_input,
	// a merge of what a snapshot holds), however long ago they ran, and so
	// are their children: a child's subagent_events are in its parent's
	// Log, a shared child's Log beside its folder.
	open := map[string]bool{}
	// owners are, of each old folder, the session Logs that name it (or
	// an ancestor of it): the folder is removed under their locks.
	owners := map[string][]string{}
	named := map[string]map[string]bool{}
	namedBy := func(p string) map[string]bool {
		if ids, ok := named[p]; ok {
			return ids
		}
		ids := map[string]bool{}
		descendants(state, p, ids)
		named[p] = ids
		return ids
	}
	if len(folders) > 0 {
		ids := slices.Sorted(maps.Keys(logs))
		for _, id := range ids {
			p := filepath.Join(state, "sessions", id+".ndjson")
			for child := range namedBy(p) {
				if _, ok := folders[child]; ok {
					owners[child] = append(owners[child], p)
				}
			}
		}
		for _, p := range openLogs {
			maps.Copy(open, namedBy(p))
		}
		// A young session may be open too: its Log is tried only when it
		// names an old folder, and released at once (nothing of it is
		// removed), so a load racing the gc meets the lock only then.
		for _, p := range youngLogs {
			ids := namedBy(p)
			if !namesAny(ids, folders) {
				continue
			}
			release, idle := lockLog(p)
			if idle {
				release()
				continue
			}
			for id := range ids {
				open[id] = true
			}
		}
	}
	for _, e := range children {
		it, ok := folders[e.Name()]
		if !ok {
			continue
		}
		if open[e.Name()] {
			rep.InUse++
			continue
		}
		rep.consider(it, cutoff)
	}
	slices.SortFunc(rep.Removed, func(a, b Item) int { return strings.Compare(a.Path, b.Path) })
	if dryRun {
		return rep, nil
	}
	kept := rep.Removed[:0]
	rep.Freed = 0
	for _, it := range rep.Removed {
		p := filepath.Join(root, filepath.FromSlash(it.Path))
		var err error
		switch {
		case it.Kind == KindSubagent:
			// Under the locks of the sessions naming it: one opened since
			// they were tried (a session/load, a pixir resume) keeps it.
			release, idle := lockAll(owners[path.Base(it.Path)])
			if !idle {
				rep.InUse++
				continue
			}
			err = snapshot.Remove(p) // read-only folders a child left are removed too
			release()
		case strings.HasSuffix(p, ".ndjson"):
			release, idle := lockLog(p) // opened since it was found?
			if !idle {
				rep.InUse++
				continue
			}
			// The metadata first: a Log without it is still a session
			// (pixir sessions lists it, session/load loads it).
			err = os.Remove(strings.TrimSuffix(p, ".ndjson") + ".json")
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				err = os.Remove(p)
			}
			release()
		default:
			err = os.Remove(p)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", it.Path, err))
			continue
		}
		kept = append(kept, it)
		rep.Freed += it.Bytes
		if removed != nil {
			removed(it)
		}
	}
	rep.Removed = kept
	return rep, nil
}

// consider adds it to the report's removals when it is older than cutoff.
func (r *Report) consider(it Item, cutoff time.Time) {
	if it.LastWrite.After(cutoff) {
		r.Kept++
		return
	}
	it.Path = snapshot.StateDir + "/" + it.Path
	it.LastWrite = it.LastWrite.UTC()
	r.Removed = append(r.Removed, it)
	r.Freed += it.Bytes
}

// lockLog is lockIdle (a variable so a test can see which Logs gc tries).
var lockLog = lockIdle

// lockAll takes the locks of the Logs (lockLog) and returns their
// release, or false, holding none, when a process holds one of them.
func lockAll(logs []string) (release func(), ok bool) {
	var held []func()
	release = func() {
		for _, r := range held {
			r()
		}
	}
	for _, p := range logs {
		r, idle := lockLog(p)
		if !idle {
			release()
			return nil, false
		}
		held = append(held, r)
	}
	return release, true
}

// namesAny says whether ids holds a key of folders.
func namesAny(ids map[string]bool, folders map[string]Item) bool {
	for id := range ids {
		if _, ok := folders[id]; ok {
			return true
		}
	}
	return false
}

// descendants adds to ids the Subagents a session's Log names (its
// subagent_events), and theirs, found in the Logs in their folders under
// state/subagents (a shared child's children are there; an isolated
// child's are inside its own folder). A Subagent already in ids is not
// read again, so a cycle ends.
func descendants(state, logPath string, ids map[string]bool) {
	var next []string
	add := func(id string) {
		if !ids[id] && id != "." && id != ".." && !strings.ContainsAny(id, `/\`) {
			ids[id] = true
			next = append(next, id)
		}
	}
	childrenOf(logPath, add)
	for len(next) > 0 {
		id := next[len(next)-1]
		next = next[:len(next)-1]
		logs, _ := filepath.Glob(filepath.Join(state, "subagents", id, "*.ndjson"))
		for _, l := range logs {
			childrenOf(l, add)
		}
	}
}

// childrenOf calls add with each Subagent a Log names (its
// subagent_events). A Log that cannot be read names none.
func childrenOf(logPath string, add func(id string)) {
	f, err := os.Open(logPath)
	if err != nil {
		return
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if bytes.Contains(line, []byte(`"type":"subagent_event"`)) {
			var ev struct {
				Data struct {
					SubagentID string `json:"subagent_id"`
				} `json:"data"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.Data.SubagentID != "" {
				add(ev.Data.SubagentID)
			}
		}
		if err != nil {
			return
		}
	}
}

// readDir lists a folder; a missing one is empty.
func readDir(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	return entries, nil
}

// lastWrite is the latest modification time in a child's folder and the
// room it takes on disk (diskBytes of every entry, the folder's own
// included). A running child writes its Log (beside its snapshot)
// with every step, so the folder's Logs and the folder itself say when it
// was last in use; the snapshot's own files keep the times they were
// copied with, so they are counted for their size only.
func lastWrite(dir string) (time.Time, int64) {
	var last time.Time
	var bytes int64
	if fi, err := os.Lstat(dir); err == nil {
		last = fi.ModTime()
	}
	count := func(p string, fi fs.FileInfo) {
		bytes += diskBytes(fi)
		if filepath.Dir(p) == dir && fi.ModTime().After(last) {
			last = fi.ModTime() // the child's Log, base, workspace folder
		}
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			if fi, ierr := d.Info(); ierr == nil {
				count(p, fi)
			}
		}
		return nil // an unreadable entry counts as nothing
	})
	return last, bytes
}
