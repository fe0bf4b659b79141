package main

import (
	"os"
	"os/signal"
	"syscall"
)

// outliveClosedPipes makes a write to a closed stdout or stderr fail
// (EPIPE) instead of killing the process with SIGPIPE, for the commands
// that do work and record it: pixir run … | head -1 killed the run at its
// next word, its tool calls done and not in the Log; an editor that
// stopped reading killed pixir acp mid-turn. Reading commands (sessions,
// inspect, …) keep dying at once, as a Unix filter does: they record
// nothing. The signal is caught, not ignored, so the commands Pixir runs
// start with SIGPIPE at its default, as a shell's do.
func outliveClosedPipes() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}
