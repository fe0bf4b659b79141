//go:build !linux

package sandbox

import (
	"os/exec"
	"runtime"
)

func detectKernel() kernel {
	return kernel{landlockProblem: "Landlock is a Linux feature; " + runtime.GOOS + " has no kernel sandbox Pixir can use"}
}

func containProblem() string {
	return "PID namespaces are a Linux feature"
}

// run starts the command in a process group of its own, killed as a
// group when cancelled. Nothing is confined here.
func (s *Sandbox) run(newCmd func() *exec.Cmd, p Policy) (Outcome, error) {
	var out Outcome
	if p.Restricts() {
		out.Unconfined = probeKernel().landlockProblem
	}
	cmd := newCmd()
	setGroup(cmd)
	err := cmd.Run()
	out.State = cmd.ProcessState
	return out, err
}
