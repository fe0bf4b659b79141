//go:build pixirtesthooks

package merge

import (
	"context"
	"os"
	"strconv"
)

// hookFromEnv is the hook HoldEnv asks for, or nil.
func hookFromEnv(ctx context.Context) func(n int) {
	after, err := strconv.Atoi(os.Getenv(HoldEnv))
	if err != nil || after <= 0 {
		return nil
	}
	return holdAfter(ctx, after, os.Stderr)
}
