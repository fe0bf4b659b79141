package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
)

// Seen is what a session's model has seen of a file: the hash and size of
// its whole content when it last read it, or when its own write or edit
// left it so. A write over an existing file is refused unless the file is
// still what the model saw: otherwise it would replace, from a stale copy,
// a change the user (or the editor's buffer) made since.
type Seen struct {
	// Path is the file's absolute path (as Workspace.Resolve gives it).
	Path string `json:"path"`
	// SHA256 is the hex SHA-256 of the whole content; empty when it is
	// not known (a file too large to hash, an editor that served only
	// some of its lines): a write over it is then not checked.
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size"`
}

// SeenFiles is a session's memory of what its model has seen of each
// file: the runtime keeps it for each session (a Subagent has its own),
// from the Seen of each result, and rebuilds it from the Log when the
// session is opened again. Without it (nil), writes are not checked.
type SeenFiles interface {
	SeenFile(path string) (Seen, bool)
}

// seenHash hashes what is written to it, to make a Seen.
type seenHash struct {
	h hash.Hash
	n int64
}

func newSeenHash() *seenHash { return &seenHash{h: sha256.New()} }

func (s *seenHash) Write(p []byte) (int, error) {
	s.h.Write(p)
	s.n += int64(len(p))
	return len(p), nil
}

func (s *seenHash) seen(path string) *Seen {
	return &Seen{Path: path, SHA256: hex.EncodeToString(s.h.Sum(nil)), Size: s.n}
}

// seenText is the Seen of a file whose content is text.
func seenText(path, text string) *Seen {
	h := newSeenHash()
	_, _ = io.WriteString(h, text)
	return h.seen(path)
}

// staleWrite refuses a write over the existing file at t that the model
// has not seen as it is now: it has not read it in this session, or the
// file changed since it last read or wrote it. now is the file's current
// Seen, nil when it could not be hashed.
func staleWrite(env Env, t target, now *Seen) *Failure {
	if env.Seen == nil {
		return nil
	}
	was, ok := env.Seen.SeenFile(t.abs)
	if !ok {
		return &Failure{Kind: ErrConflict, Message: fmt.Sprintf(
			"%s already exists and you have not read it in this session; write replaces the whole file, so read it first (then write, or change part of it with edit), or choose another path",
			t.rel)}
	}
	if was.SHA256 == "" || now == nil || now.SHA256 == "" || now.SHA256 == was.SHA256 {
		return nil
	}
	return &Failure{
		Kind: ErrConflict,
		Message: fmt.Sprintf("%s changed since you last read or wrote it (it is %d bytes now, was %d): someone else changed it, and writing what you had would undo that; "+
			"read it again first, then write (or change part of it with edit) so that their change is kept", t.rel, now.Size, was.Size),
		Details: map[string]any{"size": now.Size, "seen_size": was.Size},
	}
}
