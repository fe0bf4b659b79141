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

// identity is not known here: every workspace file is read.
func identity(fs.FileInfo) (uint64, int64, bool) { return 0, 0, false }

// Umask is not read here: every permission needs a chmod.
func Umask() uint32 { return 0o7777 }
