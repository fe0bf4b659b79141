package workflows

import (
	"testing"

	"go.uber.org/goleak"
)

// Run stops children from goroutines of its own, and the fakes end
// children from theirs: every one must be gone when the tests end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
