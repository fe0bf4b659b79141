//go:build !linux

package runtime

import (
	"io/fs"
	"time"
)

// changedTime is when a file was last changed: its modification time
// here (Linux reads the status change time, which no process can set).
func changedTime(fi fs.FileInfo) time.Time { return fi.ModTime() }
