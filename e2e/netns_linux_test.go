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
	"time"

	"golang.org/x/sys/unix"
)

// netnsHost is a network namespace made by the test, with one address
// reachable from this namespace.
type netnsHost struct {
	name string
	IP   net.IP

	lastTID int // the thread the last Listen made its socket on
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
// socket is made on a locked thread that joins the namespace and then
// returns to this one before it is unlocked. The thread must not die with
// the goroutine: a child started with Pdeathsig (etcd, kine, PostgreSQL in
// these tests) is killed when the thread that forked it exits, and any
// thread may have been that one.
func (h *netnsHost) Listen(t *testing.T) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		tid int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer unix.Close(home)
		fd, err := unix.Open("/run/netns/"+h.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(h.IP.String(), "0"))
		if backErr := unix.Setns(home, unix.CLONE_NEWNET); backErr != nil {
			// Stay locked: the thread, in the wrong namespace, ends with
			// this goroutine rather than run other goroutines there.
			if ln != nil {
				ln.Close()
			}
			done <- result{err: fmt.Errorf("setns back to this namespace: %w", backErr)}
			return
		}
		runtime.UnlockOSThread()
		done <- result{ln, unix.Gettid(), err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("listening in network namespace %s: %v", h.name, r.err)
	}
	h.lastTID = r.tid
	t.Cleanup(func() { _ = r.ln.Close() })
	return r.ln
}

// TestNetnsListenKeepsItsThread: the thread that made the socket in the
// namespace lives on, back in this namespace. When it died with its
// goroutine, the etcd it had once forked (with Pdeathsig) died too, and
// kube-apiserver stopped answering in the middle of TestClusterAdmission.
func TestNetnsListenKeepsItsThread(t *testing.T) {
	h := newNetnsHost(t)
	ln := h.Listen(t)
	if !strings.HasPrefix(ln.Addr().String(), h.IP.String()+":") {
		t.Fatalf("listening at %s, want %s", ln.Addr(), h.IP)
	}
	home, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	task := fmt.Sprintf("/proc/self/task/%d", h.lastTID)
	for range 10 { // a thread that ends does so right after its goroutine
		time.Sleep(50 * time.Millisecond)
		ns, err := os.Readlink(task + "/ns/net")
		if err != nil {
			t.Fatalf("thread %d that listened in the namespace is gone: %v", h.lastTID, err)
		}
		if ns != home {
			t.Fatalf("thread %d is in %s, this process in %s", h.lastTID, ns, home)
		}
	}
}
