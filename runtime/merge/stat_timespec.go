//go:build darwin || freebsd || netbsd

package merge

import "syscall"

// statTimes is a stat's modification and status-change times (named
// Mtimespec and Ctimespec in these systems' syscall package).
func statTimes(st *syscall.Stat_t) (syscall.Timespec, syscall.Timespec) {
	return st.Mtimespec, st.Ctimespec
}
