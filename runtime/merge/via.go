package merge

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pixir-go/pixir/runtime/snapshot"
)

// linkOnTheWay returns the first folder on the way to rel, below
// workspace, that is not a real folder in the workspace (a link, or a
// file), slash-separated; "" when every existing one is a folder. A merge
// never writes, deletes or chmods through such a path: a link there
// leads wherever it points, outside the child's write set or the
// workspace itself (a child may replace a link in its snapshot by a folder
// of the same name and write beneath it). seen caches the folders
// already looked at (nil for none).
func linkOnTheWay(workspace, rel string, seen *sync.Map) string {
	dir := filepath.Dir(filepath.FromSlash(rel))
	if dir == "." {
		return ""
	}
	parts := strings.Split(dir, string(filepath.Separator))
	for i := range parts {
		d := filepath.Join(parts[:i+1]...)
		if seen != nil {
			if v, ok := seen.Load(d); ok {
				if v.(bool) {
					continue
				}
				return filepath.ToSlash(d)
			}
		}
		fi, err := os.Lstat(filepath.Join(workspace, d))
		if err != nil {
			// Absent (made by the merge as a folder), or unreadable:
			// nothing of it can lead elsewhere.
			return ""
		}
		ok := fi.Mode()&fs.ModeType == fs.ModeDir
		if seen != nil {
			seen.Store(d, ok)
		}
		if !ok {
			return filepath.ToSlash(d)
		}
	}
	return ""
}

// linkLeadsOutside says why a link at rel (slash-separated, in the
// workspace) to target leads outside the workspace, or "" when it stays
// inside: a relative target that climbs above the workspace, an absolute
// one elsewhere, or one into .pixir (Pixir's state, the children's
// snapshots). A ".." after a name (a/../b, or /ws/a/../b) is counted as
// leading outside: where it leads depends on whether a is a link, which
// the merge cannot vouch for (a/.. is not the folder holding a when a is a
// link). So an absolute target is looked at as written, before cleaning
// it (filepath.Rel would make /ws/a/../b b).
func linkLeadsOutside(workspace, rel, target string) string {
	const dotdotAfterAName = "has a .. after a name, whose end depends on links the merge cannot vouch for"
	var resolved string
	if filepath.IsAbs(target) {
		named := false // a name met: a .. at the root stays there
		for _, part := range strings.Split(filepath.ToSlash(target), "/") {
			switch part {
			case "", ".":
			case "..":
				if named {
					return dotdotAfterAName
				}
			default:
				named = true
			}
		}
		r, err := filepath.Rel(workspace, target)
		if err != nil || !filepath.IsLocal(r) {
			if filepath.Clean(target) == filepath.Clean(workspace) {
				return "" // the workspace itself
			}
			return "leads outside the workspace"
		}
		resolved = filepath.ToSlash(r)
	} else {
		parts := strings.Split(filepath.ToSlash(target), "/")
		up := 0
		for up < len(parts) && parts[up] == ".." {
			up++
		}
		if slices.Contains(parts[up:], "..") {
			return dotdotAfterAName
		}
		if up > strings.Count(rel, "/") {
			return "climbs above the workspace"
		}
		resolved = path.Join(path.Dir(rel), target)
	}
	if resolved == snapshot.StateDir || strings.HasPrefix(resolved, snapshot.StateDir+"/") {
		return "leads into " + snapshot.StateDir + "/, Pixir's state"
	}
	return ""
}
