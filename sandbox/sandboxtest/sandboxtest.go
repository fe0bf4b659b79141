// Package sandboxtest helps tests check what the sandbox promises from
// outside the command: which processes are still alive.
package sandboxtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Running lists the live processes (zombies are over) whose command line
// holds marker, its arguments joined with spaces. A process inside a PID
// namespace has another number there ($!), so tests find it by a marker
// in its arguments instead: `sleep 901.4242` runs like any sleep.
func Running(marker string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), marker) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndex(string(stat), ") "); i >= 0 && strings.HasPrefix(string(stat)[i+2:], "Z") {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// Marker is a sleep duration no other process uses: seconds made of the
// test process's id and n.
func Marker(n int) string {
	return strconv.Itoa(900+n) + "." + strconv.Itoa(os.Getpid())
}
