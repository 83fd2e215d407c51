//go:build !unix

package loadbench

import (
	"errors"
	"time"
)

// processCPU is unavailable here: benchmarks report 0 cpu-ns/op.
func processCPU() time.Duration { return 0 }

// lowestPriority is unavailable here.
func lowestPriority(int) error { return errors.New("process priority: not supported on this system") }
