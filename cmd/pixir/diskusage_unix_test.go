//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// diskUsage is the room p takes on disk, as du and pixir gc count it: the
// blocks of every entry beneath it, folders included.
func diskUsage(t *testing.T, p string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	}))
	return n
}
