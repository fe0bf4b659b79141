//go:build !unix

package sandbox

import "os"

// refuseHardLink cannot tell a file's names here.
func refuseHardLink(*os.File, string) error { return nil }
