package filters

import (
	"context"
	"testing"
)

func TestWatchInitialized(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		calls int
		want  int
	}{
		{name: "never_called", calls: 0, want: 0},
		{name: "called_once", calls: 1, want: 1},
		{name: "called_twice_runs_once", calls: 2, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := 0
			ctx := ContextWithWatchInitialized(context.Background(), func() { n++ })
			for range tt.calls {
				WatchInitialized(ctx)
			}
			if n != tt.want {
				t.Errorf("signal ran %d times, want %d", n, tt.want)
			}
		})
	}
	t.Run("no_signal_in_context", func(t *testing.T) {
		t.Parallel()
		WatchInitialized(context.Background()) // must not panic
	})
}
