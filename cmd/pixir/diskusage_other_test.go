//go:build !unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// diskUsage is the size of p's files, where their blocks are not known
// (pixir gc counts the same).
func diskUsage(t *testing.T, p string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		if fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	}))
	return n
}
