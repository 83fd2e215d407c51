// This file holds the high-availability test: two annex servers, each a
// subprocess of this test binary with its own watch cache, on one etcd.

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/etcd"
	"github.com/annexapi/annex/storage/postgres"
)

// replicaEnv, when set in the environment of this test binary, makes it an
// annex replica instead of a test run: "<etcd URL>|<etcd prefix>|<data dir>",
// or "<postgres:// DSN>|<table prefix>|<data dir>" for the PostgreSQL store.
const replicaEnv = "ANNEX_E2E_HA_REPLICA"

func TestMain(m *testing.M) {
	if spec := os.Getenv(replicaEnv); spec != "" {
		if err := runReplica(spec); err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runReplica serves the Environment resource from etcd, as the
// environments example does with --etcd-servers, with the Builder's own
// watch cache, until SIGTERM (or SIGKILL from the test). It prints
// "READY <kubeconfig>" once it serves.
func runReplica(spec string) error {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		return fmt.Errorf("bad %s %q", replicaEnv, spec)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var st interface {
		storage.Interface
		Start(context.Context) error
		Close() error
	}
	var err error
	if strings.HasPrefix(parts[0], "postgres://") {
		st, err = postgres.Config{DSN: parts[0]}.Open(ctx, postgres.Options{Table: strings.Trim(parts[1], "/")})
	} else {
		st, err = etcd.Config{Servers: []string{parts[0]}, Prefix: parts[1]}.Open(etcd.Options{})
	}
	if err != nil {
		return err
	}
	defer st.Close()
	go func() { _ = st.Start(ctx) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	b := annex.Builder{Name: "ha", Resources: []rest.Resource{environment(nil)}, DataDir: parts[2], Serving: annex.Serving{Listener: ln}, Storage: annex.Storage{Store: st}}
	srv, err := b.Build()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	// Serving: the watch cache is loaded when /readyz passes; the client
	// side polls for that, this only says where the kubeconfig is.
	fmt.Printf("READY %s\n", srv.KubeconfigPath())
	return <-done
}

// replica is a running annex subprocess.
type replica struct {
	name string
	cmd  *exec.Cmd
	dc   dynamic.Interface
	done chan struct{}
}

// startReplica starts a replica on the etcd at etcdURL, or on the
// PostgreSQL database of a postgres:// DSN.
func startReplica(t *testing.T, etcdURL, name string) *replica {
	t.Helper()
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "replica.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+etcdURL+"|/ha|"+dir)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- p
			}
		}
	}()
	go func() { _ = cmd.Wait(); logf.Close(); close(r.done) }()
	t.Cleanup(func() { r.kill() })
	var kubeconfig string
	select {
	case kubeconfig = <-ready:
	case <-r.done:
		log, _ := os.ReadFile(filepath.Join(dir, "replica.log"))
		t.Fatalf("replica %s exited before serving:\n%s", name, log)
	case <-time.After(60 * time.Second):
		t.Fatalf("replica %s not serving after 60s", name)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.Timeout = 10 * time.Second
	if r.dc, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	// Ready: a list goes through (the watch cache has its initial list).
	eventually(t, 30*time.Second, "replica "+name+" serving lists", func() bool {
		_, err := r.dc.Resource(gvr).Namespace("ha").List(context.Background(), metav1.ListOptions{})
		return err == nil
	})
	return r
}

// kill ends the replica at once (SIGKILL): no graceful shutdown, no flush.
func (r *replica) kill() {
	_ = r.cmd.Process.Kill()
	<-r.done
}

func rvOf(t *testing.T, o interface{ GetResourceVersion() string }) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", o.GetResourceVersion(), err)
	}
	return n
}

// nextEvent returns the next event of w, failing after d.
func nextEvent(t *testing.T, w watch.Interface, d time.Duration) (watch.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(d):
		t.Fatalf("no watch event within %v", d)
		return watch.Event{}, false
	}
}

func TestEtcdHA(t *testing.T) {
	testHA(t, binaries.Etcd(t))
}

// TestPostgresHA is TestEtcdHA on the PostgreSQL store: two replicas on one
// database.
func TestPostgresHA(t *testing.T) {
	dsn, err := binaries.StartPostgres(t).CreateDatabase("ha")
	if err != nil {
		t.Fatal(err)
	}
	testHA(t, dsn)
}

// testHA runs the two-replica cases on the store at url (see
// startReplica).
func testHA(t *testing.T, url string) {
	a, b := startReplica(t, url, "a"), startReplica(t, url, "b")
	ctx := t.Context()
	ea, eb := a.dc.Resource(gvr).Namespace("ha"), b.dc.Resource(gvr).Namespace("ha")

	t.Run("writes_on_one_seen_by_watch_and_consistent_list_on_other", func(t *testing.T) {
		l, err := eb.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := eb.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var created []*unstructured.Unstructured
		for i := range 10 {
			c, err := ea.Create(ctx, newEnvironment("ha", fmt.Sprintf("x-%d", i), "alice"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, c)
			// A consistent list on the other replica, at once: it must
			// include the write (its cache waits for etcd's revision).
			l, err := eb.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, it := range l.Items {
				found = found || it.GetName() == c.GetName()
			}
			if !found || rvOf(t, l) < rvOf(t, c) {
				t.Errorf("consistent list on b at %s after create %s@%s on a: found %v", l.GetResourceVersion(), c.GetName(), c.GetResourceVersion(), found)
			}
		}
		for _, c := range created {
			ev, ok := nextEvent(t, w, 10*time.Second)
			if !ok {
				t.Fatal("watch on b closed")
			}
			o, _ := ev.Object.(*unstructured.Unstructured)
			if ev.Type != watch.Added || o == nil || o.GetName() != c.GetName() || o.GetResourceVersion() != c.GetResourceVersion() {
				t.Fatalf("watch on b: %s %v, want ADDED %s@%s", ev.Type, ev.Object, c.GetName(), c.GetResourceVersion())
			}
		}
	})

	t.Run("conflicting_updates_one_wins", func(t *testing.T) {
		for i := range 5 {
			cur, err := ea.Get(ctx, "x-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for j, c := range []dynamic.ResourceInterface{ea, eb} {
				wg.Go(func() {
					u := cur.DeepCopy()
					_ = unstructured.SetNestedField(u.Object, fmt.Sprintf("owner-%d-%d", i, j), "spec", "owner")
					_, errs[j] = c.Update(ctx, u, metav1.UpdateOptions{})
				})
			}
			wg.Wait()
			ok := 0
			conflicts := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case apierrors.IsConflict(err):
					conflicts++
				default:
					t.Errorf("round %d: unexpected error %v", i, err)
				}
			}
			if ok != 1 || conflicts != 1 {
				t.Errorf("round %d: %d successes and %d conflicts (409), want one of each: %v", i, ok, conflicts, errs)
			}
		}
	})

	t.Run("kill_one_replica_mid_load", func(t *testing.T) {
		l, err := ea.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A watch on a, whose last seen revision the resumed watch on b
		// starts from. Its client reads only the first watchReads events,
		// as a client that lags would: what a had sent beyond them is lost
		// with a, and the resumed watch must deliver it.
		const watchReads = 60
		wa, err := ea.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Stop()
		seen := map[string]uint64{} // name -> revision of its ADDED event
		var lastSeen uint64
		watchDone := make(chan struct{})
		go func() {
			defer close(watchDone)
			for ev := range wa.ResultChan() {
				if o, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Added {
					n, _ := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
					seen[o.GetName()] = n
					lastSeen = max(lastSeen, n)
				}
				if len(seen) == watchReads {
					return
				}
			}
		}()

		const writers, killAfter = 4, 150
		var mu sync.Mutex
		acked := map[string]uint64{} // name -> revision of its acknowledged create
		ackedA := 0
		kill := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				for i := 0; ; i++ {
					name := fmt.Sprintf("load-%d-%d", g, i)
					c, err := ea.Create(ctx, newEnvironment("ha", name, "load"), metav1.CreateOptions{})
					if err != nil {
						return // a is gone: this write is not acknowledged
					}
					mu.Lock()
					acked[name] = rvOf(t, c)
					ackedA++
					if ackedA >= killAfter {
						once.Do(func() { close(kill) })
					}
					mu.Unlock()
				}
			})
		}
		select {
		case <-kill:
		case <-time.After(60 * time.Second):
			t.Fatal("load did not reach the kill point in 60s")
		}
		a.kill()
		wg.Wait()
		<-watchDone
		mu.Lock()
		ackedBeforeKill := len(acked)
		mu.Unlock()

		// The survivor keeps serving: writes through b.
		const afterKill = 50
		for i := range afterKill {
			name := fmt.Sprintf("after-%d", i)
			c, err := eb.Create(ctx, newEnvironment("ha", name, "load"), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create through the survivor: %v", err)
			}
			acked[name] = rvOf(t, c)
		}

		// Resume the watch on b from the last revision a delivered.
		wb, err := eb.Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatUint(lastSeen, 10)})
		if err != nil {
			t.Fatal(err)
		}
		defer wb.Stop()
		var want []string // acknowledged writes after lastSeen
		for n, rv := range acked {
			if rv > lastSeen {
				want = append(want, n)
			} else if _, ok := seen[n]; !ok {
				t.Errorf("acknowledged %s@%d at or before a's last delivered %d, but a's watch never delivered it", n, rv, lastSeen)
			}
		}
		resumed := map[string]uint64{}
		var prev uint64
		for !allIn(want, resumed) {
			ev, ok := nextEvent(t, wb, 20*time.Second)
			if !ok {
				t.Fatal("resumed watch on b closed")
			}
			o, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj || ev.Type != watch.Added {
				t.Fatalf("resumed watch: %s %v", ev.Type, ev.Object)
			}
			rv := rvOf(t, o)
			if rv <= lastSeen || rv <= prev {
				t.Errorf("resumed watch: %s@%d not after %d (last seen on a) and %d (previous)", o.GetName(), rv, lastSeen, prev)
			}
			if _, dup := seen[o.GetName()]; dup {
				t.Errorf("resumed watch delivered %s again", o.GetName())
			}
			prev = rv
			resumed[o.GetName()] = rv
		}
		for _, n := range want {
			if resumed[n] != acked[n] {
				t.Errorf("%s acknowledged at %d, resumed watch delivered it at %d", n, acked[n], resumed[n])
			}
		}

		// No acknowledged write lost: all are in a consistent list on b.
		final, err := eb.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]uint64{}
		for _, it := range final.Items {
			have[it.GetName()] = rvOf(t, &it)
		}
		found := 0
		for n, rv := range acked {
			if got, ok := have[n]; ok && got == rv {
				found++
			} else {
				t.Errorf("acknowledged write %s@%d lost (list has %v, %v)", n, rv, got, ok)
			}
		}
		unacked := 0
		for n := range have {
			if _, ok := acked[n]; !ok && strings.HasPrefix(n, "load-") {
				unacked++
			}
		}
		if len(seen) != watchReads || len(want) < afterKill+killAfter-watchReads {
			t.Errorf("a's watch read %d events, the resumed watch had %d acknowledged writes to deliver: the test lost its gap", len(seen), len(want))
		}
		t.Logf("HA: %d creates acknowledged by a before the kill, %d by b after it; %d of %d found after the kill; %d committed but unacknowledged (in flight at the kill); a's watch read %d events up to revision %d, b's watch resumed from there delivered %d (all %d acknowledged writes after it)",
			ackedBeforeKill, afterKill, found, len(acked), unacked, len(seen), lastSeen, len(resumed), len(want))
	})
}

func allIn(names []string, m map[string]uint64) bool {
	return !slices.ContainsFunc(names, func(n string) bool { _, ok := m[n]; return !ok })
}
