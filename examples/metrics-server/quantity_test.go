package main

import "testing"

// The expected strings are what k8s.io/apimachinery's resource.Quantity
// prints for NewScaledQuantity(n, -9) and NewQuantity(n, BinarySI).
func TestFormatQuantities(t *testing.T) {
	cpu := []struct {
		name string
		in   int64
		want string
	}{
		{"zero", 0, "0"},
		{"millicores", 250_000_000, "250m"},
		{"odd_nanocores", 151640434, "151640434n"},
		{"microcores", 1_500_000, "1500u"},
		{"whole_cores", 2_000_000_000, "2"},
		{"one_and_a_half", 1_500_000_000, "1500m"},
		{"kilocores", 3_000_000_000_000, "3k"},
	}
	for _, c := range cpu {
		t.Run("cpu_"+c.name, func(t *testing.T) {
			if got := formatCPU(c.in); got != c.want {
				t.Errorf("formatCPU(%d) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	mem := []struct {
		name string
		in   int64
		want string
	}{
		{"zero", 0, "0"},
		{"small", 1000, "1000"},
		{"kibibytes", 1738216 * 1024, "1738216Ki"},
		{"mebibytes", 12 << 20, "12Mi"},
		{"gibibytes", 3 << 30, "3Gi"},
		{"not_a_multiple", 123456789, "123456789"},
		{"exactly_1024", 1024, "1Ki"},
	}
	for _, c := range mem {
		t.Run("memory_"+c.name, func(t *testing.T) {
			if got := formatMemory(c.in); got != c.want {
				t.Errorf("formatMemory(%d) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
