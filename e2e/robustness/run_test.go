// This file holds one run: start the servers, record a workload of
// concurrent clients under one injected fault, quiesce, check.

package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/storage/postgres"
)

// ringSize is the example's watch-cache window: watch.Config.RingSize's
// default, which the Builder uses.
const ringSize = 1024

var runNamespaces = []string{"rb-a", "rb-b"}

const keysPerNamespace = 5

func runKeys() []string {
	var ks []string
	for _, ns := range runNamespaces {
		for i := range keysPerNamespace {
			ks = append(ks, fmt.Sprintf("%s/k%d", ns, i))
		}
	}
	return ks
}

// backend is one way of running the example: standalone on bbolt, or two
// replicas on one etcd.
type backend struct {
	name   string
	faults []string
	bin    *exampleBinary
	etcd   *etcdProc                // etcd backend only; started by the first run
	pg     *binaries.PostgresServer // postgres backend only; started by the first run
	runs   int                      // runs so far (names the etcd prefix, the database)
}

// cluster is one run's servers.
type cluster struct {
	b       *backend
	servers []*server
	dsn     string // the postgres backend's database
}

func (b *backend) newCluster(t testing.TB) *cluster {
	t.Helper()
	bin := b.bin.get(t)
	b.runs++
	c := &cluster{b: b}
	switch b.name {
	case "bbolt":
		c.servers = []*server{newServer(t, bin, "bbolt")}
	case "postgres":
		if b.pg == nil {
			// fsync on: it is killed with -9 and must keep what it
			// acknowledged.
			b.pg = binaries.StartPostgresWith(t, binaries.PostgresOptions{Fsync: true})
		}
		dsn, err := b.pg.CreateDatabase(fmt.Sprintf("rb%d", b.runs))
		if err != nil {
			t.Fatal(err)
		}
		c.dsn = dsn
		for _, n := range []string{"a", "b"} {
			c.servers = append(c.servers, newServer(t, bin, n, "--storage-backend", "postgres", "--postgres-dsn", dsn))
		}
	default:
		if b.etcd == nil {
			b.etcd = newEtcd(t)
		}
		prefix := fmt.Sprintf("/rb-%d", b.runs)
		for _, n := range []string{"a", "b"} {
			c.servers = append(c.servers, newServer(t, bin, n, "--etcd-servers", b.etcd.url, "--etcd-prefix", prefix))
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.servers))
	for i, s := range c.servers {
		wg.Go(func() { errs[i] = s.startAndWait(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *cluster) stop() {
	for _, s := range c.servers {
		s.kill()
	}
}

// compact compacts the store under the servers at rev (annex's meaning:
// rev and before expire), through the store's own client.
func (c *cluster) compact(ctx context.Context, rev uint64) error {
	if c.b.name == "postgres" {
		s, err := postgres.Config{DSN: c.dsn}.Open(ctx, postgres.Options{CompactionInterval: -1})
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Compact(ctx, rev)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.b.etcd.url}, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Compact(ctx, int64(rev)+1, clientv3.WithCompactPhysical())
	return err
}

// runConfig is one run's parameters.
type runConfig struct {
	seed    uint64
	clients int
	load    time.Duration
	fault   string // "" none, "kill", "pause", "kill-replica", "restart-etcd", "restart-postgres"
	// wrap, when set, puts something (a broken proxy, in self-tests) in
	// front of each server.
	wrap func(t testing.TB, ep *Endpoint) *Endpoint
	// window adds the window phase: more writes than the watch cache holds,
	// then a watch from before them (410), and on etcd a compaction.
	window bool
}

// run is the state of one run in progress.
type run struct {
	t       testing.TB
	cfg     runConfig
	c       *cluster
	h       *History
	eps     []*Endpoint
	keys    []string
	harness *Client // the harness's own requests (epochs, marker, gap fill)

	maxAcked atomic.Uint64
	recentMu sync.Mutex
	recent   []uint64 // recently observed revisions, for reads and watches at a revision

	rec *recorder
}

func (r *run) noteRV(rv uint64) {
	if rv == 0 {
		return
	}
	r.recentMu.Lock()
	r.recent = append(r.recent, rv)
	if len(r.recent) > 256 {
		r.recent = r.recent[len(r.recent)-128:]
	}
	r.recentMu.Unlock()
}

func (r *run) pickRV(rng *rand.Rand) (uint64, bool) {
	r.recentMu.Lock()
	defer r.recentMu.Unlock()
	if len(r.recent) == 0 {
		return 0, false
	}
	return r.recent[rng.IntN(len(r.recent))], true
}

func (r *run) noteOp(op Op) {
	if op.Obj != nil {
		r.noteRV(op.Obj.RV)
		if op.Outcome == OK && op.Kind != OpGet {
			for {
				cur := r.maxAcked.Load()
				if op.Obj.RV <= cur || r.maxAcked.CompareAndSwap(cur, op.Obj.RV) {
					break
				}
			}
		}
	}
	if op.Kind == OpList && op.Outcome == OK {
		r.noteRV(op.ListRV)
	}
}

// epoch records that server i serves: a consistent list's revision bounds
// where its watch cache's window starts.
func (r *run) epoch(ctx context.Context, i int) {
	for ctx.Err() == nil {
		start := r.h.Now()
		op := r.harness.List(ctx, r.eps[i], ListOptions{})
		if op.Outcome == OK {
			r.h.AddEpoch(Epoch{Server: op.Server, Start: start, FirstRV: op.ListRV})
			return
		}
	}
}

// expectExpired watches server i from BaseRV, which the caller knows is
// before its window: the answer must be 410.
func (r *run) expectExpired(ctx context.Context, i int) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	r.harness.Watch(ctx, r.eps[i], WatchOptions{RV: strconv.FormatUint(r.h.BaseRV, 10), ExpectExpired: true}, nil)
}

// runOnce runs one randomized run and returns its history and the checker's
// report.
func runOnce(t testing.TB, b *backend, cfg runConfig) (*History, *Report) {
	t.Helper()
	ctx := t.Context()
	c := b.newCluster(t)
	defer c.stop()
	r := &run{t: t, cfg: cfg, c: c, h: NewHistory(runNamespaces, ringSize), keys: runKeys()}
	if cfg.wrap != nil { // a self-test breaks the server on purpose: no report to keep
		r.h.VisualizationDir = t.TempDir()
	}
	for _, s := range c.servers {
		ep := s.ep
		if cfg.wrap != nil {
			ep = cfg.wrap(t, ep)
		}
		r.eps = append(r.eps, ep)
	}
	r.harness = &Client{ID: cfg.clients, H: r.h}
	for i := range r.eps {
		r.epoch(ctx, i)
	}

	// The recorder: one watch of everything, resumed after every break.
	recCtx, stopRec := context.WithCancel(ctx)
	defer stopRec()
	r.rec = newRecorder(&Client{ID: cfg.clients + 1, H: r.h}, r.eps, cfg.seed)
	recDone := make(chan struct{})
	go func() { defer close(recDone); r.rec.run(recCtx) }()
	base, ok := r.rec.waitStarted(ctx, 30*time.Second)
	if !ok {
		t.Fatalf("the recorder's first WatchList did not reach its initial-events-end bookmark")
	}
	r.h.BaseRV = base

	loadCtx, stopLoad := context.WithTimeout(ctx, cfg.load)
	defer stopLoad()
	var wg sync.WaitGroup
	for id := range cfg.clients {
		wg.Go(func() { r.client(loadCtx, id) })
	}
	faultDone := make(chan struct{})
	go func() { defer close(faultDone); r.inject(loadCtx) }()
	<-faultDone
	wg.Wait()
	for i, s := range c.servers { // every server serves before the end checks
		if err := s.waitReady(ctx); err != nil {
			t.Fatalf("server %d after the load: %v", i, err)
		}
	}
	if cfg.window {
		r.windowPhase(ctx)
	}

	// Quiesce: a last write, which the recorder must deliver; then fill the
	// recorder's gaps (restarts) with exact lists; then a consistent list on
	// every server.
	var marker uint64
	for attempt := 0; marker == 0 && attempt < 20 && ctx.Err() == nil; attempt++ {
		op := r.harness.Create(ctx, r.eps[0], "rb-a/final", fmt.Sprintf("final-%d", attempt))
		if op.Outcome == OK {
			marker = op.Obj.RV
		} else if op.Outcome == AlreadyExists { // an earlier attempt did it
			g := r.harness.Get(ctx, r.eps[0], "rb-a/final", "")
			if g.Outcome == OK {
				marker = g.Obj.RV
			}
		}
	}
	if marker == 0 {
		t.Fatalf("the final write failed")
	}
	if !r.rec.waitFor(ctx, marker, 20*time.Second) {
		t.Errorf("the recorder's watch did not deliver revision %d (last %d) within 20s", marker, r.rec.lastRV())
	}
	stopRec()
	<-recDone
	for _, g := range r.rec.gapList() {
		if g[1]-g[0] > 400 {
			t.Logf("gap (%d, %d] too long to fill", g[0], g[1])
			continue
		}
		for rv := g[0]; rv <= g[1]; rv++ {
			r.harness.List(ctx, r.eps[0], ListOptions{RV: strconv.FormatUint(rv, 10), Match: "Exact", GapFill: true})
		}
	}
	for i := range r.eps {
		r.harness.List(ctx, r.eps[i], ListOptions{})
	}
	c.stop()
	return r.h, Check(r.h)
}

// client is one client of the workload.
func (r *run) client(ctx context.Context, id int) {
	rng := rand.New(rand.NewPCG(r.cfg.seed, uint64(id)+1))
	cl := &Client{ID: id, H: r.h}
	known := map[string]uint64{}
	note := func(op Op) Op {
		r.noteOp(op)
		if op.Outcome == Refused || op.Outcome == Unknown {
			// The server is down or slow: pace the retries.
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
		if op.Obj != nil {
			known[op.Key] = op.Obj.RV
		}
		return op
	}
	for seq := 0; ctx.Err() == nil; seq++ {
		ep := r.eps[rng.IntN(len(r.eps))]
		key := r.keys[rng.IntN(len(r.keys))]
		value := fmt.Sprintf("c%d-%d", id, seq)
		switch p := rng.IntN(100); {
		case p < 18:
			note(cl.Create(ctx, ep, key, value))
		case p < 30:
			rv := ""
			if rng.IntN(4) == 0 {
				rv = "0"
			}
			note(cl.Get(ctx, ep, key, rv))
		case p < 44:
			// Update with a precondition: the revision this client last saw
			// (often stale: a conflict), or a fresh read's.
			rv, ok := known[key]
			if !ok || rng.IntN(2) == 0 {
				g := note(cl.Get(ctx, ep, key, ""))
				if g.Outcome != OK {
					continue
				}
				rv = g.Obj.RV
			}
			note(cl.Update(ctx, ep, key, value, rv))
		case p < 54:
			note(cl.Patch(ctx, ep, key, value))
		case p < 64:
			var rv uint64
			if rng.IntN(2) == 0 {
				rv = known[key]
			}
			note(cl.Delete(ctx, ep, key, rv))
		case p < 88:
			note(cl.List(ctx, ep, r.randomList(rng)))
		default:
			o := WatchOptions{}
			if rng.IntN(2) == 0 {
				o.Namespace = runNamespaces[rng.IntN(len(runNamespaces))]
			}
			rv, ok := r.pickRV(rng)
			switch {
			case rng.IntN(3) == 0:
				o.SendInitial = true
				if ok && rng.IntN(2) == 0 {
					o.RV = strconv.FormatUint(rv, 10)
				}
			case ok:
				o.RV = strconv.FormatUint(rv, 10)
			default:
				continue
			}
			wctx, cancel := context.WithTimeout(ctx, time.Duration(100+rng.IntN(200))*time.Millisecond)
			cl.Watch(wctx, ep, o, func(ev WatchEvent) { r.noteRV(ev.Obj.RV) })
			cancel()
		}
	}
}

// randomList returns a list in one of the resourceVersion modes.
func (r *run) randomList(rng *rand.Rand) ListOptions {
	o := ListOptions{}
	if rng.IntN(2) == 0 {
		o.Namespace = runNamespaces[rng.IntN(len(runNamespaces))]
	}
	if rng.IntN(3) == 0 {
		o.Limit = 1 + rng.IntN(3)
	}
	rv, ok := r.pickRV(rng)
	switch m := rng.IntN(4); {
	case m == 0 || !ok:
		// consistent
	case m == 1:
		o.RV = "0"
	case m == 2:
		o.RV, o.Match = strconv.FormatUint(rv, 10), "Exact"
	default:
		o.RV, o.Match = strconv.FormatUint(rv, 10), "NotOlderThan"
	}
	return o
}

// inject waits a random part of the load, then injects the run's fault.
func (r *run) inject(ctx context.Context) {
	if r.cfg.fault == "" {
		<-ctx.Done()
		return
	}
	rng := rand.New(rand.NewPCG(r.cfg.seed, 999))
	deadline, _ := ctx.Deadline()
	wait := time.Duration(float64(time.Until(deadline)) * (0.2 + 0.4*rng.Float64()))
	select {
	case <-ctx.Done():
		return
	case <-time.After(wait):
	}
	bg := r.t.Context() // restarts must finish even when the load is over
	i := rng.IntN(len(r.c.servers))
	s := r.c.servers[i]
	f := Fault{Kind: r.cfg.fault, Target: s.Name(), At: r.h.Now()}
	acked := r.maxAcked.Load()
	switch r.cfg.fault {
	case "kill", "kill-replica":
		s.kill()
		if err := s.startAndWait(bg); err != nil {
			r.t.Errorf("restart after kill -9: %v", err)
			return
		}
		f.Done = r.h.Now()
		r.epoch(bg, i)
		// Its cache starts at or after every write acknowledged before the
		// kill: a watch from before them must be refused.
		if acked > r.h.BaseRV {
			r.expectExpired(bg, i)
		}
	case "pause":
		s.signal(syscall.SIGSTOP)
		time.Sleep(1500 * time.Millisecond) // the fault's length, not a wait for something
		s.signal(syscall.SIGCONT)
		f.Done = r.h.Now()
	case "restart-postgres":
		p := r.c.b.pg
		f.Target = "postgres"
		r.h.EtcdRestartAt = f.At // the same rule: caches may re-list
		_ = p.Kill()
		if err := p.Restart(); err != nil {
			r.t.Errorf("restart postgres: %v", err)
			return
		}
		for _, s := range r.c.servers {
			if err := s.waitReady(bg); err != nil {
				r.t.Errorf("after the postgres restart: %v", err)
			}
		}
		f.Done = r.h.Now()
	case "restart-etcd":
		e := r.c.b.etcd
		f.Target = "etcd"
		r.h.EtcdRestartAt = f.At
		e.kill()
		if err := e.startAndWait(bg); err != nil {
			r.t.Errorf("restart etcd: %v", err)
			return
		}
		for _, s := range r.c.servers {
			if err := s.waitReady(bg); err != nil {
				r.t.Errorf("after the etcd restart: %v", err)
			}
		}
		f.Done = r.h.Now()
	}
	r.h.AddFault(f)
}

// windowPhase writes more than the watch cache holds and checks that a watch
// from before them is refused with 410 on every server; on etcd it then
// compacts and checks that an exact list at a compacted revision is 410.
func (r *run) windowPhase(ctx context.Context) {
	const writers = 8
	var wg sync.WaitGroup
	var n atomic.Int64
	r.harness.Create(ctx, r.eps[0], "rb-b/window", "window-0")
	for g := range writers {
		wg.Go(func() {
			cl := &Client{ID: r.cfg.clients + 2 + g, H: r.h}
			for i := 0; n.Add(1) <= ringSize+100 && ctx.Err() == nil; i++ {
				r.noteOp(cl.Patch(ctx, r.eps[(g+i)%len(r.eps)], "rb-b/window", fmt.Sprintf("window-%d-%d", g, i)))
			}
		})
	}
	wg.Wait()
	for i := range r.eps {
		r.expectExpired(ctx, i)
	}
	old := strconv.FormatUint(r.h.BaseRV+1, 10)
	if r.c.b.name == "bbolt" {
		// bbolt keeps its history for 5 minutes: an exact list before the
		// cache's window is served by the store.
		if op := r.harness.List(ctx, r.eps[0], ListOptions{RV: old, Match: "Exact"}); op.Outcome != OK {
			r.t.Errorf("exact list at %s before the cache's window: %s %s", old, op.Outcome, op.Err)
		}
		return
	}
	l := r.harness.List(ctx, r.eps[0], ListOptions{})
	if l.Outcome != OK {
		r.t.Errorf("list before compaction: %s", l.Err)
		return
	}
	if err := r.c.compact(ctx, l.ListRV-1); err != nil {
		r.t.Errorf("compact: %v", err)
		return
	}
	r.h.AddFault(Fault{Kind: "compact", Target: r.c.b.name, At: r.h.Now(), Done: r.h.Now(), Revision: l.ListRV - 1})
	for i := range r.eps {
		if op := r.harness.List(ctx, r.eps[i], ListOptions{RV: old, Match: "Exact"}); op.Outcome != Expired {
			r.t.Errorf("exact list at compacted revision %s on %s: %s %s, want 410", old, op.Server, op.Outcome, op.Err)
		}
	}
}

// envInt reads a positive integer from the environment, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
