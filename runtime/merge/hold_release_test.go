//go:build !pixirtesthooks

package merge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReleaseBuildsIgnoreTheHoldHook: only a build with the test-hooks tag
// reads HoldEnv.
func TestReleaseBuildsIgnoreTheHoldHook(t *testing.T) {
	t.Setenv(HoldEnv, "1")
	require.Nil(t, hookFromEnv(context.Background()))
}
