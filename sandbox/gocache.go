package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// Go's build cache for confined commands. Every go build, go vet or go
// test writes its build cache (GOCACHE, by default ~/.cache/go-build),
// and a confined command may not write there: a read-only reviewer's
// `go test` — a workflow step's verify command, which Pixir runs under
// the child's sandbox — would fail with "permission denied" before any
// test ran. Opening the user's own cache to children is not the answer:
// what a child writes there (a forged compiled package, a forged cached
// test result) the user's own builds would trust. So a confined command
// whose Go build cache it may not write gets Pixir's own, a folder under
// $PIXIR_HOME that only Pixir's commands use, made writable for it.
// A cache listed in [sandbox] writable is used as it is. The module cache
// (GOMODCACHE) is only read by builds of modules whose dependencies are
// downloaded; a download needs the network, which a reviewer has not.
// Each project (the user's workspace a command works for, Policy.Project)
// has a cache of its own beneath Pixir's: a child of one project must not
// plant compiled packages that another project's builds would link.

// WithGoCache returns a copy of s whose confined commands use dir as Go's
// build cache when they may not write their own ("" turns it off).
func (s *Sandbox) WithGoCache(dir string) *Sandbox {
	c := *s.orDefault()
	c.goCache = dir
	return &c
}

// ProjectGoCache is the Go build cache of project's confined commands
// beneath dir, Pixir's (WithGoCache): one folder per project, named by a
// hash of its path. dir itself when either is "".
func ProjectGoCache(dir, project string) string {
	if dir == "" || project == "" {
		return dir
	}
	sum := sha256.Sum256([]byte(filepath.Clean(project)))
	return filepath.Join(dir, hex.EncodeToString(sum[:8]))
}

// goBuildCache is the Go build cache a command with env would use: GOCACHE,
// or the user's cache folder's go-build; "" when Go would find none (or
// the cache is off).
func goBuildCache(env []string) string {
	get := func(name string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], name+"="); ok {
				return v
			}
		}
		return ""
	}
	if c := get("GOCACHE"); c != "" {
		if c == "off" || !filepath.IsAbs(c) {
			return ""
		}
		return filepath.Clean(c)
	}
	if x := get("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "go-build")
	}
	if h := get("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "go-build")
	}
	return ""
}

// isBeneath reports whether path is dir or beneath it.
func isBeneath(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// goCacheFor gives a confined command Pixir's Go build cache (own) when it
// may not write the one env names: the env and writable paths it runs
// with. A cache it may write, or no cache of Pixir's, changes nothing.
func goCacheFor(env, writable []string, own string) ([]string, []string) {
	if own == "" {
		return env, writable
	}
	if c := goBuildCache(env); c != "" {
		for _, w := range writable {
			if isBeneath(c, w) {
				return env, writable
			}
		}
	}
	if err := os.MkdirAll(own, 0o700); err != nil {
		return env, writable // Go says what it cannot write, as before
	}
	return setEnv(env, "GOCACHE="+own), append(writable, own)
}
