//go:build !windows

package tools

import (
	"os"
	"syscall"
)

// dirFlags opens a directory to list it: O_DIRECTORY refuses anything
// else (a FIFO swapped in would block the open).
const dirFlags = os.O_RDONLY | syscall.O_DIRECTORY
