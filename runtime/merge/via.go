package merge

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
