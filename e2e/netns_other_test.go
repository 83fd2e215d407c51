//go:build !linux

package e2e

import (
	"net"
	"testing"
)

// netnsHost needs Linux's network namespaces.
type netnsHost struct{ IP net.IP }

func newNetnsHost(t *testing.T) *netnsHost {
	t.Helper()
	t.Fatal("a test host in a network namespace needs Linux")
	return nil
}

func (h *netnsHost) Listen(t *testing.T) net.Listener { return nil }
