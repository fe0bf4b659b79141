package mcp

import "syscall"

// processAttr puts a stdio server in its own process group, and has the
// kernel kill it if Pixir dies without stopping it (Pdeathsig): a server
// must not outlive the session it serves.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
