package attrs

import "testing"

func TestObjectName(t *testing.T) {
	t.Parallel()
	named := map[string]any{"metadata": map[string]any{"name": "from-object"}}
	tests := []struct {
		name string
		a    Admission
		want string
	}{
		{"name_wins", Admission{Name: "n", Object: named}, "n"},
		{"object_metadata", Admission{Object: named}, "from-object"},
		{"old_object_metadata", Admission{OldObject: map[string]any{"metadata": map[string]any{"name": "old"}}}, "old"},
		{"none", Admission{Object: map[string]any{"metadata": "bad"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.a.ObjectName(); got != tc.want {
				t.Errorf("ObjectName() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReinvocation(t *testing.T) {
	t.Parallel()
	var a Admission
	a.RequestReinvocation()
	if !a.ReinvocationRequested() || a.IsReinvoke() {
		t.Fatalf("first pass: requested=%v reinvoke=%v", a.ReinvocationRequested(), a.IsReinvoke())
	}
	a.SetReinvoke(true)
	a.RequestReinvocation()
	if a.ReinvocationRequested() || !a.IsReinvoke() {
		t.Errorf("second pass: a request must be ignored: requested=%v reinvoke=%v", a.ReinvocationRequested(), a.IsReinvoke())
	}
	calls := 0
	mk := func() any { calls++; return new(int) }
	p1, p2 := a.PluginState("k", mk), a.PluginState("k", mk)
	if p1 != p2 || calls != 1 {
		t.Errorf("PluginState made %d values; same pointer: %v", calls, p1 == p2)
	}
}
