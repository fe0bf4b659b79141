package main

import (
	"io/fs"
	"syscall"
	"time"
)

// changedAt is a file's status change time, as Pixir reads it.
func changedAt(fi fs.FileInfo) time.Time {
	return time.Unix(fi.Sys().(*syscall.Stat_t).Ctim.Unix())
}
