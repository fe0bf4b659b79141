//go:build !unix

package runtime

import "os"

// openLogFile is os.OpenFile where there is no cheaper way to open.
func openLogFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// syncDir does nothing where a folder cannot be opened to be synced.
func syncDir(string) error { return nil }
