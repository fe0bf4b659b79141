//go:build unix && !linux

package mcp

import "syscall"

// processAttr puts a stdio server in its own process group. Without
// Linux's Pdeathsig, a server whose Pixir is killed outright ends when it
// reads the end of its stdin, as MCP servers do.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
