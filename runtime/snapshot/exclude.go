package snapshot

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// StateDir is Pixir's state folder inside a workspace (Logs, snapshots). It
// matches runtime.StateDir, which this package may not import.
const StateDir = ".pixir"

// vcsNames are version-control metadata, excluded whether a folder or a file
// (a Git worktree or submodule has a .git file pointing into the excluded
// .git folder, so copying it would only leave a dangling pointer).
var vcsNames = map[string]bool{
	".git": true, // Git
	".hg":  true, // Mercurial
	".svn": true, // Subversion
	".jj":  true, // Jujutsu
	".bzr": true, // Bazaar
}

// depDirs are folders that the project's own tools regenerate from files that
// are copied, that are often large, and that nobody edits by hand. They are
// excluded only as folders, at any depth (monorepos nest them).
var depDirs = map[string]bool{
	// npm/yarn/pnpm packages: often hundreds of MB; `npm ci` restores them
	// from the lockfile, which is copied.
	"node_modules": true,
	// Python virtual environments: their scripts hold the absolute path of
	// the original environment, so a copy would install into the parent's.
	".venv": true,
	"venv":  true,
	".tox":  true,
	".nox":  true,
	// Python bytecode and tool caches, rebuilt on use.
	"__pycache__":   true,
	".mypy_cache":   true,
	".pytest_cache": true,
	".ruff_cache":   true,
}

// Excluded reports whether Take leaves out the workspace-relative path rel
// (slash- or OS-separated; only its last element is looked at, so the rule
// holds at any depth). The rule:
//
//   - .pixir: Pixir's own state (Logs, other snapshots) — always, so a
//     snapshot never contains snapshots;
//   - .git, .hg, .svn, .jj, .bzr: version-control metadata, folder or file.
//     A child works on files; history stays with the parent;
//   - folders node_modules, .venv, venv, .tox, .nox (installed dependencies,
//     restored from lockfiles that are copied) and __pycache__, .mypy_cache,
//     .pytest_cache, .ruff_cache (caches rebuilt on use).
//
// Kept on purpose, because a child must be able to build: vendor/ (source in
// Go projects, and a PHP or Ruby project cannot install offline without it),
// and folders such as target/, build/ or dist/, which are source in many
// projects; a build-output folder that carries a CACHEDIR.TAG (Cargo's
// target/ does) is left out by Take and Changes through that tag instead,
// since a name cannot tell.
func Excluded(rel string, isDir bool) bool {
	name := filepath.Base(filepath.FromSlash(rel))
	if name == StateDir || vcsNames[name] {
		return true
	}
	return isDir && depDirs[name]
}

// cacheDirTag is the file that marks a cache folder, and cacheDirSignature
// the bytes it must start with (Cache Directory Tagging specification).
const (
	cacheDirTag       = "CACHEDIR.TAG"
	cacheDirSignature = "Signature: 8a477f597d28d172789f06886806bc55"
)

// taggedCache reports whether dir holds a valid CACHEDIR.TAG; entries are
// dir's names, so the tag is only opened when it is there.
func taggedCache(dir string, entries []os.DirEntry) bool {
	found := false
	for _, e := range entries {
		if e.Name() == cacheDirTag && e.Type().IsRegular() {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	f, err := os.Open(filepath.Join(dir, cacheDirTag))
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, len(cacheDirSignature))
	n, _ := io.ReadFull(f, buf)
	return bytes.Equal(buf[:n], []byte(cacheDirSignature))
}
