package prompt

import (
	"os"
	"path/filepath"
	"strings"
)

// Repo is a git repository a project is in.
type Repo struct {
	Root string `json:"root"`
	// Branch is the checked-out branch, "detached at <commit>", or empty
	// when HEAD cannot be read.
	Branch string `json:"branch,omitempty"`
}

func (r *Repo) on() string {
	switch {
	case r.Branch == "":
		return ""
	case strings.HasPrefix(r.Branch, "detached"):
		return ", " + r.Branch
	}
	return ", on branch " + r.Branch
}

// FindRepo finds the repository dir is in by looking for .git in it and
// its parents (a folder, or the file a worktree or submodule has), and
// reads its branch from HEAD, without running git. Nil when there is none.
func FindRepo(dir string) *Repo {
	for d := filepath.Clean(dir); ; {
		dotGit := filepath.Join(d, ".git")
		if fi, err := os.Stat(dotGit); err == nil {
			gitDir := dotGit
			if !fi.IsDir() {
				gitDir = linkedGitDir(d, dotGit)
			}
			return &Repo{Root: d, Branch: branch(gitDir)}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil
		}
		d = parent
	}
}

// linkedGitDir reads a .git file ("gitdir: <path>"); empty when it is not
// one.
func linkedGitDir(root, file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	return dir
}

func branch(gitDir string) string {
	if gitDir == "" {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	head := strings.TrimSpace(string(data))
	if ref, ok := strings.CutPrefix(head, "ref:"); ok {
		return strings.TrimPrefix(strings.TrimSpace(ref), "refs/heads/")
	}
	if len(head) >= 7 {
		return "detached at " + head[:7]
	}
	return ""
}
