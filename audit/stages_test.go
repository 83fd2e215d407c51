package audit

import (
	"strconv"
	"testing"
	"time"
)

// TestAppendMillis: the stage-latencies figures are what strconv's float
// formatting of the microseconds in milliseconds writes.
func TestAppendMillis(t *testing.T) {
	for _, us := range []int64{0, 1, 9, 10, 99, 100, 999, 1000, 1001, 12345, 999999, 1000000, 123456789, -1, -1500} {
		d := time.Duration(us) * time.Microsecond
		want := strconv.FormatFloat(float64(us)/1000, 'f', 3, 64)
		if got := string(appendMillis(nil, d+999*time.Nanosecond*time.Duration(sign(us)))); got != want {
			t.Errorf("%v: got %s, want %s", d, got, want)
		}
	}
}

func sign(n int64) int64 {
	if n < 0 {
		return -1
	}
	return 1
}
