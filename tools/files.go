package tools

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"
)

// Files is how tools read and write files. The runtime gives tools either
// local files, confined to the workspace at the moment of use, or the
// editor's (ACP fs/read_text_file and fs/write_text_file), so that unsaved
// buffers are read and edits are reviewed where the user works. Paths are
// absolute and already resolved by Workspace.Resolve. A missing file is
// reported with an error that matches fs.ErrNotExist.
type Files interface {
	// Open opens a regular file for reading; the caller closes it. A
	// reader, not bytes, so a tool can take ten lines of a huge log.
	Open(ctx context.Context, path string) (io.ReadCloser, error)
	// WriteFile creates missing parent directories.
	WriteFile(ctx context.Context, path string, data []byte) error
}

// LineRanges is a Files that can open a range of a file's lines without
// reading the rest: the editor's fs/read_text_file takes a first line and
// a number of lines, and a whole file can be more than one message may
// carry. read uses it when Files has it.
type LineRanges interface {
	// OpenLines opens at most limit lines of the file from line (1-based).
	OpenLines(ctx context.Context, path string, line, limit int) (io.ReadCloser, error)
}

// Replacer is a Files that can replace a file only if it is still the one
// a tool read (compare and swap): edit uses it, so that a save made between
// its read and its write is not lost.
type Replacer interface {
	// ReplaceFile is WriteFile over the file read as was (the Stat of
	// what Open returned): just before the file is replaced it checks
	// that it is still that one, and if not leaves it and returns an
	// error matching ErrChanged. An error matching errors.ErrUnsupported
	// says it cannot check (the editor writes): the caller checks the text
	// itself.
	ReplaceFile(ctx context.Context, path string, data []byte, was fs.FileInfo) error
}

// Errors a Files implementation wraps so tools can explain them with the
// path the model used.
var (
	ErrIsDir      = errors.New("is a directory")
	ErrNotRegular = errors.New("is not a regular file")
	// ErrChanged: a Replacer found the file changed since it was read.
	ErrChanged = errors.New("changed since it was read")
	// ErrEditorRefused: the editor answered a request for a file with an
	// error (not "not found"): its reason is in the error's text.
	ErrEditorRefused = errors.New("the editor refused")
)

// Terminals runs commands in terminals the editor owns (ACP terminal/*),
// so the user watches them live in the tool call.
type Terminals interface {
	Run(ctx context.Context, req TerminalRequest) (TerminalResult, error)
}

// TerminalRequest is one command to run in a terminal.
type TerminalRequest struct {
	// ToolCallID is the call the terminal is shown in.
	ToolCallID  string
	Command     string
	Cwd         string
	OutputLimit int
	Timeout     time.Duration
}

// TerminalResult is how a terminal command ended.
type TerminalResult struct {
	TerminalID string
	Output     string
	Truncated  bool
	// ExitCode is nil when the command was ended by a signal.
	ExitCode *int
	Signal   string
	TimedOut bool
}
