//go:build linux

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The live view's last frame counts a looped run as the outcome's
// verdict line does: a completed run whose loop took two iterations
// showed "5/5 checkpoint_ready" (the practice demo "17/18 … COMPLETED",
// its escalation's earlier partial run counted as one not ready).
func TestLiveViewsLastFrameCountsAsTheOutcome(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", drafter+reviewer("1", "NEEDS WORK", "name the owner")+reviewer("2", "ACCEPTABLE"))
	wf := e.file("wf.yaml", reviewLoop)
	cmd := e.command("run", "--script", script, "--workflow", wf)
	cmd.Env = append(cmd.Env, "TERM=xterm")
	var out syncBuffer
	got := runOnPTY(t, cmd, &out)
	require.Contains(t, got, "COMPLETED — 3 of 3 steps checkpoint_ready; 2 runs of earlier iterations")
	last := strings.LastIndex(got, "Workflow review loop — ")
	require.GreaterOrEqual(t, last, 0, got)
	head, _, _ := strings.Cut(got[last:], "\n")
	require.Contains(t, head, "Workflow review loop — 3/3 checkpoint_ready; 2 runs of earlier iterations · ")
	require.Contains(t, head, "COMPLETED")
	// Every frame before it counts as the outcome does too: three steps,
	// whichever iteration runs (mid-run frames said 2/4, 3/5).
	for _, frame := range strings.Split(got, "Workflow review loop — ")[1:] {
		head, _, _ := strings.Cut(frame, " · ")
		require.Regexp(t, `^\d/3 checkpoint_ready`, head)
	}
}
