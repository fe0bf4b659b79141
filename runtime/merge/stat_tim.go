//go:build unix && !(darwin || freebsd || netbsd)

package merge

import "syscall"

// statTimes is a stat's modification and status-change times.
func statTimes(st *syscall.Stat_t) (syscall.Timespec, syscall.Timespec) { return st.Mtim, st.Ctim }
