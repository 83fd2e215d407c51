// This file holds Config, the Controller that New builds, how a
// configuration becomes priority levels with seats (nominal, lendable and
// borrowing limits) and a sorted list of FlowSchemas, and the periodic
// re-allocation of seats between levels (borrowing).

package flowcontrol

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/kubeclient"
)

// Kube's defaults of the server's seats.
const (
	DefaultMaxRequestsInFlight         = 400
	DefaultMaxMutatingRequestsInFlight = 200
)

// Config configures New. Its zero value is kube's default: priority and
// fairness on, 400 + 200 seats, kube's mandatory and suggested objects.
type Config struct {
	// Disabled turns priority and fairness off
	// (--enable-priority-and-fairness=false): the filter then applies the
	// two plain max-in-flight limits, as kube's WithMaxInFlightLimit.
	Disabled bool
	// MaxRequestsInFlight (--max-requests-inflight) and
	// MaxMutatingRequestsInFlight (--max-mutating-requests-inflight): with
	// priority and fairness, their sum is the server's seats; without, the
	// limits of read-only (get, list) and mutating requests. Zero means
	// 400 and 200; negative means 0 (no limit of that kind when disabled).
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// ConfigFiles (--flowcontrol-config-file) hold FlowSchemas and
	// PriorityLevelConfigurations in YAML; they add to kube's suggested
	// objects and replace those of the same name. Start re-reads them when
	// they change. Empty means the defaults alone.
	ConfigFiles []string
	// Objects are more objects, as if read from a file (after the files'
	// objects, replacing those of the same name).
	Objects Configuration
	// Cluster, when set (delegated mode), is the kube-apiserver whose
	// flowschemas and prioritylevelconfigurations are the configuration
	// once Start has listed them: files and Objects then no longer apply,
	// as a k8s.io/apiserver server follows the cluster. Until the first
	// list, and whenever the cluster cannot be reached, the last good
	// configuration stays.
	Cluster *kubeclient.Client
	// LongRunning tells which requests are long-running; those other than
	// watches bypass the filter. Nil means filters.DefaultLongRunning.
	LongRunning filters.LongRunningFunc
	// RequestWaitLimit bounds the queue wait of a request whose context has
	// no deadline (watches). Zero means 15s (kube: --request-timeout / 4).
	// A request with a deadline waits at most a quarter of the time from its
	// arrival to its deadline; never more than a minute.
	RequestWaitLimit time.Duration
	// ObjectCounter gives the number of objects of a resource, from which a
	// LIST's width in seats is estimated. Nil means unknown: one seat.
	ObjectCounter ObjectCounter
	// WatchCount gives the number of watches interested in a write (for its
	// extra seats). Nil means the watches in flight through this filter, as
	// kube's watch tracker counts them.
	WatchCount func(info *filters.RequestInfo) int
	// Registerer receives the apiserver_flowcontrol_* metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger logs reconfigurations and source errors; nil means none.
	Logger *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// FileCheckInterval is how often Start looks for changed ConfigFiles;
	// zero means 10s.
	FileCheckInterval time.Duration
	// BorrowingPeriod is how often seats are re-allocated between levels
	// from their demand; zero means kube's 10s.
	BorrowingPeriod time.Duration
	// ClusterRetry is the first wait before re-listing an unreachable
	// cluster (doubling to 30s); zero means 1s.
	ClusterRetry time.Duration
}

// Controller is priority and fairness for one server: the filter, the
// configuration sources and the debug dumps. It is safe for concurrent use.
type Controller struct {
	cfg         Config
	serverCL    int
	now         func() time.Time
	log         *zap.Logger
	m           *metrics
	longRunning filters.LongRunningFunc
	drops       *dropTracker
	watches     *watchTracker
	inflight    *maxInFlight

	state atomic.Pointer[snapshot]

	// mu guards levels, nominalSum and the reconfiguration itself.
	mu         sync.Mutex
	levels     map[string]*level
	nominalSum int

	fileDigest   [32]byte     // of ConfigFiles as last read
	reloadErrors atomic.Int64 // reloads refused
}

// snapshot is one configuration as requests read it, replaced atomically.
type snapshot struct {
	schemas  []*schema
	catchAll *schema
	objects  Configuration
}

type schema struct {
	fs   *FlowSchema
	lvl  *level
	spec levelSpec // the level's spec when the snapshot was made
	// The header values, shared by every response: their capacity equals
	// their length, so an append by a handler copies.
	fsUIDValue, plUIDValue []string
}

// New validates cfg, reads the configuration files and returns a Controller
// serving that configuration.
func New(cfg Config) (*Controller, error) {
	c := &Controller{cfg: cfg, now: cfg.Now, log: cfg.Logger, longRunning: cfg.LongRunning, levels: map[string]*level{}}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	if c.longRunning == nil {
		c.longRunning = filters.DefaultLongRunning
	}
	ro, mut := limitOf(cfg.MaxRequestsInFlight, DefaultMaxRequestsInFlight), limitOf(cfg.MaxMutatingRequestsInFlight, DefaultMaxMutatingRequestsInFlight)
	c.serverCL = ro + mut
	if cfg.Disabled {
		c.inflight = newMaxInFlight(ro, mut)
		return c, nil
	}
	if c.serverCL <= 0 {
		return nil, fmt.Errorf("%w: MaxRequestsInFlight=%d and MaxMutatingRequestsInFlight=%d; they must add up to something positive", ErrInvalidConfig, ro, mut)
	}
	var err error
	if c.m, err = newMetrics(cfg.Registerer); err != nil {
		return nil, fmt.Errorf("%w: metrics: %v", ErrInvalidConfig, err)
	}
	c.drops = newDropTracker(c.now)
	c.watches = newWatchTracker()
	c.fileDigest = filesDigest(cfg.ConfigFiles)
	objs, err := c.localConfiguration()
	if err != nil {
		return nil, err
	}
	c.apply(objs)
	return c, nil
}

func limitOf(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// localConfiguration is the defaults, then the files, then cfg.Objects.
func (c *Controller) localConfiguration() (Configuration, error) {
	objs := DefaultConfiguration()
	if len(c.cfg.ConfigFiles) > 0 {
		f, err := LoadFiles(c.cfg.ConfigFiles...)
		if err != nil {
			return Configuration{}, err
		}
		objs = merge(objs, f)
	}
	extra := Configuration{}
	for _, fs := range c.cfg.Objects.FlowSchemas {
		fs.setDefaults()
		if fs.Metadata.UID == "" {
			fs.Metadata.UID = StableUID(KindFlowSchema, fs.Metadata.Name)
		}
		if err := ValidateFlowSchema(&fs); err != nil {
			return Configuration{}, err
		}
		extra.FlowSchemas = append(extra.FlowSchemas, fs)
	}
	for _, pl := range c.cfg.Objects.PriorityLevels {
		pl.setDefaults()
		if pl.Metadata.UID == "" {
			pl.Metadata.UID = StableUID(KindPriorityLevelConfiguration, pl.Metadata.Name)
		}
		if err := ValidatePriorityLevel(&pl); err != nil {
			return Configuration{}, err
		}
		extra.PriorityLevels = append(extra.PriorityLevels, pl)
	}
	return merge(objs, extra), nil
}

// Configuration returns the objects being served.
func (c *Controller) Configuration() Configuration {
	if s := c.state.Load(); s != nil {
		return s.objects
	}
	return Configuration{}
}

// apply makes objs the served configuration. Missing mandatory objects are
// added; FlowSchemas naming a missing level are dropped (as kube's dangling
// schemas). Levels that disappear keep serving the requests they hold and
// are forgotten once idle; a level that stays keeps its queues.
func (c *Controller) apply(objs Configuration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range MandatoryPriorityLevels() {
		if !slices.ContainsFunc(objs.PriorityLevels, func(p PriorityLevelConfiguration) bool { return p.Metadata.Name == m.Metadata.Name }) {
			objs.PriorityLevels = append(objs.PriorityLevels, m)
		}
	}
	for _, m := range MandatoryFlowSchemas() {
		if !slices.ContainsFunc(objs.FlowSchemas, func(f FlowSchema) bool { return f.Metadata.Name == m.Metadata.Name }) {
			objs.FlowSchemas = append(objs.FlowSchemas, m)
		}
	}

	specs := map[string]levelSpec{}
	var shareSum float64
	for i := range objs.PriorityLevels {
		pl := &objs.PriorityLevels[i]
		s := levelSpec{uid: pl.Metadata.UID}
		switch {
		case pl.Spec.Type == PriorityLevelExempt:
			s.exempt = true
			if e := pl.Spec.Exempt; e != nil {
				s.shares, s.lendablePercent = deref(e.NominalConcurrencyShares, 0), deref(e.LendablePercent, 0)
			}
		case pl.Spec.Limited != nil:
			l := pl.Spec.Limited
			s.shares, s.lendablePercent, s.borrowPercent = deref(l.NominalConcurrencyShares, DefaultNominalConcurrencyShares), deref(l.LendablePercent, 0), l.BorrowingLimitPercent
			if q := l.LimitResponse.Queuing; l.LimitResponse.Type == LimitResponseQueue && q != nil {
				s.queues, s.handSize, s.queueLengthLimit = int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit)
			}
		default:
			continue
		}
		specs[pl.Metadata.Name] = s
		shareSum += float64(s.shares)
	}
	// Quiescing levels still count, as in kube, until they drain.
	for name, l := range c.levels {
		if _, ok := specs[name]; ok {
			continue
		}
		l.mu.Lock()
		idle := l.idleLocked()
		l.quiescing = true
		shares := l.spec.shares
		l.mu.Unlock()
		if idle {
			delete(c.levels, name)
			continue
		}
		shareSum += float64(shares)
	}
	if shareSum <= 0 {
		shareSum = 1
	}
	c.nominalSum = 0
	for name, s := range specs {
		s.nominalCL = int(math.Ceil(float64(c.serverCL) * float64(s.shares) / shareSum))
		lendable := int(math.Round(float64(s.nominalCL) * float64(s.lendablePercent) / 100))
		borrowing := c.serverCL
		if s.borrowPercent != nil {
			borrowing = int(math.Round(float64(s.nominalCL) * float64(*s.borrowPercent) / 100))
		}
		s.minCL, s.maxCL = s.nominalCL-lendable, s.nominalCL+borrowing
		s.maxSeats = 0
		if s.queues > 0 {
			s.maxSeats = int(math.Max(1, math.Min(math.Ceil(float64(s.nominalCL)*0.15), float64(s.nominalCL/s.handSize))))
		}
		c.nominalSum += s.nominalCL
		specs[name] = s
		l, ok := c.levels[name]
		if !ok {
			l = newLevel(name, c.now, c.m)
			c.levels[name] = l
		}
		l.mu.Lock()
		l.quiescing = false
		l.syncLocked()
		l.reconfigureLocked(s, s.nominalCL-lendable/2, !ok)
		l.mu.Unlock()
	}

	snap := &snapshot{objects: objs}
	for i := range objs.FlowSchemas {
		fs := &objs.FlowSchemas[i]
		if _, ok := specs[fs.Spec.PriorityLevelConfiguration.Name]; !ok {
			c.log.Warn("FlowSchema names a missing priority level; ignored", zap.String("flowSchema", fs.Metadata.Name),
				zap.String("priorityLevel", fs.Spec.PriorityLevelConfiguration.Name))
			continue
		}
		spec := specs[fs.Spec.PriorityLevelConfiguration.Name]
		s := &schema{fs: fs, lvl: c.levels[fs.Spec.PriorityLevelConfiguration.Name], spec: spec,
			fsUIDValue: []string{fs.Metadata.UID}[:1:1], plUIDValue: []string{spec.uid}[:1:1]}
		snap.schemas = append(snap.schemas, s)
		if fs.Metadata.Name == NameCatchAll {
			snap.catchAll = s
		}
	}
	slices.SortStableFunc(snap.schemas, func(a, b *schema) int {
		return cmp.Or(cmp.Compare(a.fs.Spec.MatchingPrecedence, b.fs.Spec.MatchingPrecedence), cmp.Compare(a.fs.Metadata.Name, b.fs.Metadata.Name))
	})
	c.state.Store(snap)
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// classify returns the first matching schema, or catch-all.
func (s *snapshot) classify(u *filters.User, info *filters.RequestInfo) *schema {
	for _, sc := range s.schemas {
		if matchesSchema(sc.fs, u, info) {
			return sc
		}
	}
	return s.catchAll
}

// adjustBorrowing re-allocates seats between the limited levels from the
// seat demand each saw since the last call, as kube's updateBorrowing does:
// each gets between max(minCL, min(nominalCL, high watermark)) and maxCL, in
// proportion to its smoothed demand (a fair allocation), all adding up to
// the sum of the nominal limits less what exempt demand takes.
func (c *Controller) adjustBorrowing() {
	c.mu.Lock()
	defer c.mu.Unlock()
	type item struct {
		l                    *level
		lower, upper, target float64
		minCL                int
	}
	var items []item
	remaining := c.nominalSum
	var minSum, lowerSum int
	for _, l := range c.levels {
		high, smoothed := l.demandStats()
		l.mu.Lock()
		s, quiescing := l.spec, l.quiescing
		l.mu.Unlock()
		if quiescing {
			continue
		}
		if s.exempt {
			remaining -= max(s.minCL, high)
			continue
		}
		lower := max(s.minCL, min(s.nominalCL, high))
		items = append(items, item{l: l, lower: float64(lower), upper: float64(s.maxCL), target: math.Max(float64(lower), smoothed), minCL: s.minCL})
		minSum += s.minCL
		lowerSum += lower
	}
	if len(items) == 0 {
		return
	}
	alloc := make([]int, len(items))
	switch {
	case remaining <= minSum:
		for i, it := range items {
			alloc[i] = it.minCL
		}
	case remaining <= lowerSum:
		frac := float64(remaining-minSum) / float64(lowerSum-minSum)
		for i, it := range items {
			alloc[i] = it.minCL + int(math.Round((it.lower-float64(it.minCL))*frac))
		}
	default:
		lo, hi, tg := make([]float64, len(items)), make([]float64, len(items)), make([]float64, len(items))
		for i, it := range items {
			lo[i], hi[i], tg[i] = it.lower, it.upper, it.target
		}
		for i, a := range fairAllocation(float64(c.nominalSum), lo, hi, tg) {
			alloc[i] = int(math.Round(a))
		}
	}
	for i, it := range items {
		it.l.setCurrentCL(alloc[i])
	}
}

// fairAllocation finds the p for which sum(clamp(p*target, lower, upper))
// equals total (kube's computeConcurrencyAllocation) by bisection, and
// returns the clamped values.
func fairAllocation(total float64, lower, upper, target []float64) []float64 {
	at := func(p float64) (sum float64, out []float64) {
		out = make([]float64, len(target))
		for i := range target {
			out[i] = min(max(p*max(target[i], 0.001), lower[i]), upper[i])
			sum += out[i]
		}
		return sum, out
	}
	lo, hi := 0.0, 1.0
	for s, _ := at(hi); s < total && hi < 1e12; s, _ = at(hi) {
		hi *= 2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if s, _ := at(mid); s < total {
			lo = mid
		} else {
			hi = mid
		}
	}
	_, out := at(hi)
	return out
}

// Start runs the configuration sources and the seat re-allocation until ctx
// is done: it re-reads changed ConfigFiles, or follows the cluster when
// Config.Cluster is set. It returns nil when ctx ends. With priority and
// fairness disabled it only waits for ctx.
func (c *Controller) Start(ctx context.Context) error {
	if c.cfg.Disabled {
		<-ctx.Done()
		return nil
	}
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	run(c.runBorrowing)
	if c.cfg.Cluster != nil {
		run(c.runCluster)
	} else if len(c.cfg.ConfigFiles) > 0 {
		run(c.runFiles)
	}
	wg.Wait()
	return nil
}

func (c *Controller) runBorrowing(ctx context.Context) {
	t := time.NewTicker(cmp.Or(c.cfg.BorrowingPeriod, 10*time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.adjustBorrowing()
		}
	}
}
