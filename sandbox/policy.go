package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Policy is what one command may do. The zero Policy confines nothing but
// the environment and the command's lifetime, which always apply.
type Policy struct {
	// Confine holds the command's writes to Writable and a private
	// temporary directory (its TMPDIR); everything else is read-only.
	Confine bool
	// Writable are absolute paths (directories, or files) beneath which a
	// confined command may create, change and remove files.
	Writable []string
	// Protected are absolute paths inside Writable that stay read-only all
	// the same (a workspace's .git and .pixir). Landlock can only allow, so
	// a writable directory holding one is opened up entry by entry instead:
	// its existing entries are writable, but no new entry can be made
	// directly in it.
	Protected []string
	// DenyNetwork refuses the command TCP connections and binds (loopback
	// included) and abstract Unix sockets outside its sandbox.
	DenyNetwork bool
	// Env are NAME=value pairs set for this command on top of the
	// allowlisted environment (GIT_CEILING_DIRECTORIES, for instance).
	Env []string
	// Execute, when not nil, are the only files (or folders: every file
	// beneath) a confined command may execute: Programs resolves them.
	// Nothing the command may write is executable then, so it cannot run
	// a program it wrote or copied. What an allowed program does itself is
	// not restricted (see Programs).
	Execute []string
	// Workspace, when set, is the folder the Writable paths inside it were
	// made for (a Subagent's workspace, or its snapshot): each of them is
	// opened to the command only as reached from Workspace without a
	// symbolic link. A folder a command replaced by a link since (to
	// anywhere, outside the workspace too) is not opened: Landlock would
	// allow wherever the link leads, not the workspace's folder.
	Workspace string
	// Project is the user's workspace the command works for (a Subagent's
	// too, whatever folder it runs in): confined commands of one project
	// share a Go build cache, never another project's (ProjectGoCache).
	Project string
}

// Restricts reports whether the policy asks the kernel for anything.
func (p Policy) Restricts() bool { return p.Confine || p.DenyNetwork }

// Config is the [sandbox] table of config.toml.
type Config struct {
	// Env names more variables commands get, beside DefaultEnv: exact
	// names, or prefixes ending in "*". An exact name here also lets
	// through a variable named like a secret.
	Env []string `toml:"env"`
	// Writable are more paths every confined command may write (build
	// caches such as ~/.cache/go-build); "~/" is the home directory.
	Writable []string `toml:"writable"`
	// Landlock, when false, turns the kernel sandbox off: confined
	// commands then run unconfined, and Pixir says so.
	Landlock *bool `toml:"landlock"`
}

// Validate checks the table, naming the key at fault of each problem.
func (c Config) Validate() error {
	var errs []error
	for _, n := range c.Env {
		name := strings.TrimSuffix(n, "*")
		if name == "" || strings.ContainsAny(name, "=* \t") {
			errs = append(errs, fmt.Errorf("[sandbox] env: %q is not a variable name or a NAME_* prefix", n))
		}
	}
	for _, p := range c.Writable {
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~/") {
			errs = append(errs, fmt.Errorf("[sandbox] writable: %q must be an absolute path or start with ~/", p))
		}
	}
	return errors.Join(errs...)
}

// DefaultEnv are the variables every command gets from Pixir's
// environment: what shells, compilers and package managers need to find
// themselves, and nothing that usually holds a credential. A name ending
// in "*" is a prefix.
var DefaultEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "NO_COLOR", "TZ",
	"LANG", "LANGUAGE", "LC_*", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"EDITOR", "VISUAL", "PAGER", "CI",
	"GO*", "CGO_*", "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "PKG_CONFIG_PATH",
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTFLAGS",
	"NODE_PATH", "NODE_OPTIONS", "NVM_DIR",
	"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "JAVA_HOME",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// secretSuffixes and secretWords name variables that hold credentials;
// they are dropped even when a prefix allows them, unless allowed by their
// exact name.
var (
	secretSuffixes = []string{"_KEY", "_KEYS", "_AUTH", "_PAT", "_PASS"}
	secretWords    = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "API_KEY", "PRIVATE_KEY"}
)

// looksSecret reports whether a variable is named like a credential.
func looksSecret(name string) bool {
	up := strings.ToUpper(name)
	for _, s := range secretSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// FilterEnv returns the variables of base (NAME=value pairs) that allow
// lets through, in their order. allow holds exact names and NAME_* prefixes;
// deny names variables that are dropped whatever allow says (a provider key
// under a custom name). A variable named like a secret passes only when
// allow names it exactly.
func FilterEnv(base, allow, deny []string) []string {
	var out []string
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || slices.Contains(deny, name) {
			continue
		}
		exact, byPrefix := false, false
		for _, a := range allow {
			if prefix, isPrefix := strings.CutSuffix(a, "*"); isPrefix {
				byPrefix = byPrefix || strings.HasPrefix(name, prefix)
			} else if a == name {
				exact = true
			}
		}
		if exact || (byPrefix && !looksSecret(name)) {
			out = append(out, kv)
		}
	}
	return out
}

// setEnv sets NAME=value pairs in env, replacing earlier values.
func setEnv(env []string, pairs ...string) []string {
	for _, kv := range pairs {
		name, _, _ := strings.Cut(kv, "=")
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		env = append(env, kv)
	}
	return env
}

// expandHome turns "~/x" into the home directory's x.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
