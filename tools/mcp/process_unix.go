//go:build unix

package mcp

import (
	"os"
	"syscall"
)

// signalGroup sends SIGTERM, or SIGKILL when kill is set, to the process
// group the server leads.
func signalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
}
