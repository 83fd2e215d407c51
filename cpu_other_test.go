//go:build !unix

package annex

import "time"

// processCPU is unavailable here: benchmarks report 0 cpu-ns/op.
func processCPU() time.Duration { return 0 }
