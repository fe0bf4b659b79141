//go:build !linux && !darwin

package runtime

import (
	"bytes"
	"os"
)

// writePieces writes the pieces as one write of their concatenation.
func writePieces(f *os.File, pieces ...[]byte) error {
	_, err := f.Write(bytes.Join(pieces, nil))
	return err
}
