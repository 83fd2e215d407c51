//go:build unix

package loadbench

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time of the process so far, so
// benchmarks on a shared machine can report CPU per operation, which other
// processes do not inflate.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lowestPriority sets process pid's nice value to 19, the lowest CPU
// priority.
func lowestPriority(pid int) error {
	return syscall.Setpriority(syscall.PRIO_PROCESS, pid, 19)
}
