package e2e

// A test host in a network namespace of its own: some tests need a server at
// an address kube-apiserver accepts in an Endpoints object (neither loopback
// nor link-local), and the only such addresses a test may use are those of
// hosts it makes itself. The namespace is joined to this one by a veth pair,
// so traffic to it never leaves the machine.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// netnsHost is a network namespace made by the test, with one address
// reachable from this namespace.
type netnsHost struct {
	name string
	IP   net.IP
}

// newNetnsHost makes a network namespace and a veth pair between it and
// this one, on a /30 of 10.250.0.0/16; the test's cleanup deletes both. It
// needs root (CI runs as root).
func newNetnsHost(t *testing.T) *netnsHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("making a network namespace for a test host needs root (CI runs as root)")
	}
	id := os.Getpid() % 16000
	name := fmt.Sprintf("annex-e2e-%d", id)
	outer, inner := fmt.Sprintf("ax%da", id), fmt.Sprintf("ax%db", id)
	base := fmt.Sprintf("10.250.%d.%d", id/64, (id%64)*4)
	ip := net.ParseIP(base).To4()
	hostIP := net.IPv4(ip[0], ip[1], ip[2], ip[3]+1)
	nsIP := net.IPv4(ip[0], ip[1], ip[2], ip[3]+2)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", name)
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", name).Run() // takes the veth pair with it
		_ = exec.Command("ip", "link", "del", outer).Run()
	})
	run("link", "add", outer, "type", "veth", "peer", "name", inner)
	run("link", "set", inner, "netns", name)
	run("addr", "add", hostIP.String()+"/30", "dev", outer)
	run("link", "set", outer, "up")
	run("-n", name, "addr", "add", nsIP.String()+"/30", "dev", inner)
	run("-n", name, "link", "set", inner, "up")
	run("-n", name, "link", "set", "lo", "up")
	return &netnsHost{name: name, IP: nsIP}
}

// Listen opens a TCP listener at the host's address, port 0: its socket
// lives in the host's namespace although this process serves it. The
// socket is made on a thread that joined the namespace; that thread never
// runs Go code again (a goroutine that ends locked takes its thread with it).
func (h *netnsHost) Listen(t *testing.T) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		fd, err := unix.Open("/run/netns/"+h.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(h.IP.String(), "0"))
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("listening in network namespace %s: %v", h.name, r.err)
	}
	t.Cleanup(func() { _ = r.ln.Close() })
	return r.ln
}
