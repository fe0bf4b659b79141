//go:build !linux

package snapshot

import (
	"io/fs"
	"time"
)

const openFlags = 0

// ctimeOf is not available: Changes reads every file of the recorded size.
func ctimeOf(fs.FileInfo) (int64, bool) { return 0, false }

// lchtimes leaves a symbolic link's own time as it was made.
func lchtimes(string, time.Time) error { return nil }

// umask is not read here: the portable copy always sets the mode.
func umask() uint32 { return 0o7777 }
