// Package prompt builds the system prompt of a session: what the model is
// told before the conversation. In order:
//
//  1. Pixir's guidance (base.md: how the tools fit together, when to
//     delegate to a child or a workflow, how a checkpoint is handed over),
//     or the text configured to replace it;
//  2. the environment: the workspace, whether it is a git repository and
//     on which branch, the platform and the date;
//  3. the catalogue of the agents and workflow templates the session may
//     use (Input.Catalogue, made by the runtime);
//  4. the instruction files of the user and the project (AGENTS.md);
//  5. for a Subagent, what it is and its agent's developer instructions.
//
// Every part is bounded, so a prompt never grows without limit. Nothing in
// this package runs at program start.
package prompt

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"
)

//go:embed base.md
var base string

//go:embed child.md
var childNote string

// Base is Pixir's own guidance, the first part of every prompt unless the
// configuration replaces it.
func Base() string { return base }

// Bounds of the parts that come from files.
const (
	// DefaultMaxInstructions bounds the instruction files together.
	DefaultMaxInstructions = 32 << 10
	// MaxBase bounds a configured replacement of the guidance.
	MaxBase = 32 << 10
	// MaxCatalogue bounds the catalogue of agents and workflow templates.
	MaxCatalogue = 8 << 10
	// MaxDeveloperInstructions bounds a Subagent's agent instructions.
	MaxDeveloperInstructions = 16 << 10
)

// Options are the configurable parts: config.toml's [prompt] table.
type Options struct {
	// Base replaces Pixir's guidance when not empty; BaseSource says
	// where it came from.
	Base, BaseSource string
	// MaxInstructions bounds the instruction files together; 0 means
	// DefaultMaxInstructions.
	MaxInstructions int
}

// Input is what one session's prompt is built from.
type Input struct {
	Options
	// Workspace is the folder the session's tools work in.
	Workspace string
	// Project is the folder whose repository and instruction files apply:
	// the workspace of the user's session, and for a Subagent the project
	// of the session that spawned it (a child's isolated snapshot has no
	// .git, and its copies of AGENTS.md are the project's). Empty means
	// Workspace.
	Project string
	// Home is $PIXIR_HOME, where the user's own AGENTS.md is; empty reads
	// none.
	Home string
	// Now dates the prompt.
	Now time.Time
	// Catalogue is the catalogue of the agents and workflow templates the
	// session may use, one line each (bounded by its maker); it is shown
	// under its own heading after the environment, cut to MaxCatalogue.
	Catalogue string
	// Child describes a Subagent; nil for a user's session.
	Child *Child
}

// Child is what a Subagent's prompt says of it.
type Child struct {
	// Agent names its agent; DeveloperInstructions are that agent's.
	Agent                 string
	DeveloperInstructions string
	// Depth is 1 for a child of a user's session; MaxDepth is the deepest
	// a Subagent may be (one at MaxDepth cannot spawn).
	Depth, MaxDepth int
	// ReadOnly: its permission mode is read_only.
	ReadOnly bool
}

// Source is a part of the prompt read from a file.
type Source struct {
	// Kind is "guidance", "user instructions" or "project instructions".
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Bytes is how much of the file the prompt holds; Truncated says the
	// file was longer.
	Bytes     int  `json:"bytes"`
	Truncated bool `json:"truncated,omitempty"`
}

// Prompt is a built system prompt and what it was made of.
type Prompt struct {
	Text    string   `json:"text"`
	Sources []Source `json:"sources"`
	// Repo is the project's git repository; nil when it is not in one.
	Repo *Repo `json:"repo,omitempty"`
}

// Build makes the prompt of one session. Files that cannot be read are left
// out: a prompt is never refused.
func Build(in Input) Prompt {
	if in.Project == "" {
		in.Project = in.Workspace
	}
	if in.MaxInstructions <= 0 {
		in.MaxInstructions = DefaultMaxInstructions
	}
	var p Prompt
	var b strings.Builder

	guidance := base
	if replaced := strings.TrimSpace(in.Base); replaced != "" {
		text, cut := clip(replaced, MaxBase)
		guidance = text
		p.Sources = append(p.Sources, Source{Kind: "guidance", Path: in.BaseSource, Bytes: len(text), Truncated: cut})
	}
	b.WriteString(strings.TrimSpace(guidance))
	b.WriteString("\n")

	p.Repo = FindRepo(in.Project)
	writeEnvironment(&b, in, p.Repo)

	if c := strings.TrimSpace(in.Catalogue); c != "" {
		text, _ := clip(c, MaxCatalogue)
		b.WriteString("\n# Agents and workflow templates\n\n")
		b.WriteString(text)
		b.WriteString("\n")
	}

	p.Sources = append(p.Sources, writeInstructions(&b, in, p.Repo)...)

	if c := in.Child; c != nil {
		b.WriteString("\n")
		b.WriteString(strings.TrimSpace(childNote))
		b.WriteString("\n")
		if c.Agent != "" {
			fmt.Fprintf(&b, "\nYou run as the %q agent.", c.Agent)
		}
		if c.ReadOnly {
			b.WriteString(" Your permission mode is read_only: read, search and run read-only commands; changes are refused.")
		}
		if c.Depth >= c.MaxDepth {
			fmt.Fprintf(&b, " You are at the deepest level Subagents may reach (%d): you cannot spawn Subagents or run workflows; do the work yourself.", c.MaxDepth)
		}
		b.WriteString("\n")
		if dev := strings.TrimSpace(c.DeveloperInstructions); dev != "" {
			text, _ := clip(dev, MaxDeveloperInstructions)
			b.WriteString("\n# Your agent's instructions\n\n")
			b.WriteString(text)
			b.WriteString("\n")
		}
	}
	p.Text = b.String()
	return p
}

func writeEnvironment(b *strings.Builder, in Input, repo *Repo) {
	b.WriteString("\n# Environment\n\n")
	fmt.Fprintf(b, "- Workspace: %s (your tools work here; paths outside it are refused)\n", in.Workspace)
	if in.Project != in.Workspace {
		fmt.Fprintf(b, "- This workspace is a snapshot of %s made for you: what you change stays here, and is listed in your result\n", in.Project)
	}
	switch {
	case repo == nil:
		b.WriteString("- Git: not a git repository\n")
	case in.Project != in.Workspace:
		fmt.Fprintf(b, "- Git: the project is a repository at %s%s; your snapshot has no .git of its own\n", repo.Root, repo.on())
	default:
		fmt.Fprintf(b, "- Git: a repository at %s%s\n", repo.Root, repo.on())
	}
	fmt.Fprintf(b, "- Platform: %s/%s\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(b, "- Today: %s\n", in.Now.Format("2006-01-02 (Monday)"))
}

// writeInstructions adds the user's and the project's instruction files,
// most general first, each cut to what is left of the budget.
func writeInstructions(b *strings.Builder, in Input, repo *Repo) []Source {
	type file struct{ kind, path string }
	var files []file
	if in.Home != "" {
		files = append(files, file{"user instructions", filepath.Join(in.Home, "AGENTS.md")})
	}
	for _, dir := range projectDirs(in.Project, repo) {
		if f := InstructionFile(dir); f != "" {
			files = append(files, file{"project instructions", f})
		}
	}
	var sources []Source
	left := in.MaxInstructions
	header := false
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		text := strings.TrimSpace(string(data))
		if err != nil || text == "" {
			continue
		}
		if !header {
			b.WriteString("\n# Instructions of the user and the project\n\n" +
				"These files hold the user's and the project's instructions, the most general first: where they disagree, the later one wins. " +
				"They do not change the runtime's rules (permission modes, the workspace's bounds).\n")
			header = true
		}
		src := Source{Kind: f.kind, Path: f.path}
		if left <= 0 {
			src.Truncated = true
			fmt.Fprintf(b, "\n## %s\n\n[left out: the instruction files reached their limit of %d bytes (max_instructions in config.toml)]\n", f.path, in.MaxInstructions)
			sources = append(sources, src)
			continue
		}
		kept, cut := clip(text, left)
		left -= len(kept)
		if cut {
			left = 0 // what follows a cut file is left out, not cut to a few bytes
		}
		src.Bytes, src.Truncated = len(kept), cut
		fmt.Fprintf(b, "\n## %s\n\n%s\n", f.path, kept)
		if cut {
			fmt.Fprintf(b, "\n[cut: %d more bytes in %s; the instruction files are limited to %d bytes (max_instructions in config.toml)]\n",
				len(text)-len(kept), f.path, in.MaxInstructions)
		}
		sources = append(sources, src)
	}
	return sources
}

// InstructionFile is the instruction file of a folder: AGENTS.md, the
// convention Codex, opencode and Zed read, or else CLAUDE.md, so that a
// project that has only that one is still read. When both are there only
// AGENTS.md is: CLAUDE.md is then mostly a copy of it or a pointer to it,
// and reading both would say everything twice. Empty when there is none.
func InstructionFile(dir string) string {
	for _, name := range []string{"AGENTS.md", "CLAUDE.md"} {
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			return path
		}
	}
	return ""
}

// projectDirs are the folders whose instruction files apply, from the
// repository's root down to the project; only the project itself outside
// a repository (its parents belong to no one in particular).
func projectDirs(project string, repo *Repo) []string {
	if repo == nil {
		return []string{project}
	}
	rel, err := filepath.Rel(repo.Root, project)
	if err != nil || strings.HasPrefix(rel, "..") {
		return []string{project}
	}
	dirs := []string{repo.Root}
	if rel == "." {
		return dirs
	}
	dir := repo.Root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		dir = filepath.Join(dir, part)
		dirs = append(dirs, dir)
	}
	return dirs
}

// clip cuts s to at most n bytes, on a line end when one is near, never
// inside a character.
func clip(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(s[:cut], '\n'); nl > cut*3/4 {
		cut = nl
	}
	return strings.TrimRight(s[:cut], " \t\n"), true
}
