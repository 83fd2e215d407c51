// This file holds the Auditor: the configuration, the filter that turns a
// request into events at each stage, and Start, which runs the backends.

package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/annexapi/annex/filters"
)

// The annotations audit itself sets.
const (
	// StageLatenciesAnnotation is annex's own: the time spent in each stage
	// of the chain, e.g. "authentication=0.2ms,authorization=1.1ms,storage=2.4ms"
	// (from Config.Stages), on ResponseComplete events.
	StageLatenciesAnnotation = "annex.dev/stage-latencies"
	// RejectedByAnnotation is annex's own: the stage that rejected the
	// request, when one did (from Config.Stages).
	RejectedByAnnotation = "annex.dev/rejected-by"
	// TruncatedAnnotation marks an event whose request and response objects
	// were dropped for size, as Kubernetes' truncate backend; annex also sets
	// it when a response body was larger than Config.MaxObjectBytes.
	TruncatedAnnotation = "audit.k8s.io/truncated"
)

// Config configures New. The zero value means no audit: without a Policy, or
// without a backend, nothing is recorded (as kube-apiserver without
// --audit-policy-file).
type Config struct {
	// Policy decides what is recorded (--audit-policy-file). Nil means
	// nothing is.
	Policy *Policy
	// Log is the log backend (--audit-log-*). Zero means none.
	Log LogConfig
	// Webhook is the webhook backend (--audit-webhook-*). Zero means none.
	Webhook WebhookConfig
	// LongRunning says which requests are long-running: only those get a
	// ResponseStarted event, and their responses are never recorded. Nil
	// means filters.DefaultLongRunning (watch and /debug/pprof/).
	LongRunning filters.LongRunningFunc
	// Stages, when set, returns for the request of ctx, answered with the
	// HTTP status code (0 when no response was started), the time spent in
	// each stage of the chain and the stage that rejected it ("" when none),
	// as recorded by the chain's stage trace; they become the
	// annex.dev/stage-latencies and annex.dev/rejected-by annotations of
	// ResponseComplete events. Nil means neither annotation. It is called
	// once per audited request, after the rest of the chain returned.
	Stages func(ctx context.Context, code int) (latencies, rejectedBy string)
	// MaxObjectBytes bounds a recorded request or response object: a larger
	// response is not recorded and the event is marked truncated. Zero means
	// 10 MiB.
	MaxObjectBytes int64
	// Registerer receives the audit metrics. Nil means no metrics.
	Registerer prometheus.Registerer
	// Logger receives backend errors (rate-limited). Nil means no logging.
	Logger *zap.Logger
	// Now is the clock of stage timestamps (and of requestReceivedTimestamp
	// when no filters.WithRequestReceivedTimestamp ran). Nil means time.Now.
	Now func() time.Time
}

// Auditor is the audit stage. A nil *Auditor audits nothing: its Filter is
// the identity and its Start only waits for its context.
type Auditor struct {
	eval        *Evaluator
	backends    []*backend
	longRunning filters.LongRunningFunc
	stages      func(context.Context, int) (string, string)
	maxObject   int64
	truncMin    int64 // smallest MaxEventSize of a truncating backend; 0: none truncates
	metrics     *auditMetrics
	logger      *zap.Logger
	now         func() time.Time
	started     sync.Once
	// reuse is set when every backend writes in the request's goroutine
	// (no batch mode), so an event's bytes can be reused once written.
	reuse bool
	bufs  sync.Pool // *[]byte: encoding buffers
}

// New checks cfg and builds the backends: it compiles the policy, creates
// the log file and loads the webhook's kubeconfig. It returns nil (no audit)
// when cfg has no Policy or no backend.
func New(cfg Config) (*Auditor, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	eval, err := NewEvaluator(cfg.Policy)
	if err != nil {
		return nil, err
	}
	a := &Auditor{eval: eval, longRunning: cfg.LongRunning, stages: cfg.Stages, maxObject: cfg.MaxObjectBytes, logger: cfg.Logger, now: cfg.Now}
	if a.now == nil {
		a.now = time.Now
	}
	if a.longRunning == nil {
		a.longRunning = filters.DefaultLongRunning
	}
	if a.maxObject == 0 {
		a.maxObject = 10 << 20
	}
	if a.logger == nil {
		a.logger = zap.NewNop()
	}
	if a.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	var errs []error
	if cfg.Log.enabled() {
		s, err := newLogSink(&cfg.Log)
		if err == nil {
			var b *backend
			b, err = newBackend(pluginLog, s, cfg.Log.Batch, cfg.Log.Truncate, logDefaults, a.metrics, a.logger)
			a.add(b)
		}
		errs = append(errs, err)
	}
	if cfg.Webhook.enabled() {
		tc, err := cfg.Webhook.Truncate.withDefaults()
		var maxBatch int64
		if tc.Enabled {
			maxBatch = tc.MaxBatchSize
		}
		var s *webhookSink
		if err == nil {
			s, err = newWebhookSink(&cfg.Webhook, maxBatch)
		}
		if err == nil {
			var b *backend
			b, err = newBackend(pluginWebhook, s, cfg.Webhook.Batch, cfg.Webhook.Truncate, webhookDefaults, a.metrics, a.logger)
			a.add(b)
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		for _, b := range a.backends {
			_ = b.sink.close()
		}
		return nil, err
	}
	a.bufs.New = func() any { return new([]byte) }
	a.reuse = true
	for _, b := range a.backends {
		a.reuse = a.reuse && b.mode != ModeBatch
	}
	return a, nil
}

// The kube-apiserver defaults of each backend's mode.
var (
	logDefaults     = backendDefaults{mode: ModeBlocking, maxBatch: 1}
	webhookDefaults = backendDefaults{mode: ModeBatch, maxBatch: 400, qps: 10, burst: 15, async: true}
)

// Validate returns every problem New would find with c, joined, without
// New's side effects: it compiles the policy, checks each backend's mode,
// sizes and format, looks at (never creates) the log file's directory, and
// reads the webhook's kubeconfig. A Config without a Policy or without a
// backend is valid (it audits nothing); so is a backend without a Policy,
// which New ignores.
func (c *Config) Validate() error {
	var errs []error
	if c.Policy != nil {
		if _, err := NewEvaluator(c.Policy); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Log.enabled() {
		errs = append(errs, c.Log.check(), c.Log.Batch.check(pluginLog, c.Log.Truncate, logDefaults))
	}
	if c.Webhook.enabled() {
		_, err := c.Webhook.client()
		errs = append(errs, err, c.Webhook.Batch.check(pluginWebhook, c.Webhook.Truncate, webhookDefaults))
	}
	if c.MaxObjectBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxObjectBytes %d is negative", ErrInvalidConfig, c.MaxObjectBytes))
	}
	return errors.Join(errs...)
}

// Enabled reports whether New would return an Auditor for c: c has a
// Policy and at least one backend.
func (c *Config) Enabled() bool {
	return c.Policy != nil && (c.Log.enabled() || c.Webhook.enabled())
}

func (a *Auditor) add(b *backend) {
	if b == nil {
		return
	}
	a.backends = append(a.backends, b)
	if b.truncate.Enabled && (a.truncMin == 0 || b.truncate.MaxEventSize < a.truncMin) {
		a.truncMin = b.truncate.MaxEventSize
	}
}

// Enabled reports whether a records anything.
func (a *Auditor) Enabled() bool { return a != nil }

// Start runs the backends until ctx is done, then stops accepting events,
// writes every buffered one (retrying webhook batches as usual) and closes
// the log file; it returns when all of that is done. Batch mode needs Start
// running; events sent after Start returned are counted as lost. Cancel ctx
// only after the server has drained its requests, so their last events are
// written. Start runs at most once; later calls only wait for ctx.
func (a *Auditor) Start(ctx context.Context) error {
	ran := false
	if a != nil {
		a.started.Do(func() { ran = true })
	}
	if !ran {
		<-ctx.Done()
		return nil
	}
	errs := make([]error, len(a.backends))
	var wg sync.WaitGroup
	for i, b := range a.backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.run(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Filter is the audit stage: it decides the request's level by the policy
// (for the authenticated user, before impersonation), writes the
// RequestReceived event, installs the recorder later stages annotate through
// (filters.AddAuditAnnotation and the accessors beside it), and writes
// ResponseStarted (long-running requests, when the response starts),
// ResponseComplete or, when a handler panics, Panic before re-panicking.
// A blocking-strict backend that fails to store RequestReceived rejects the
// request with a 500.
func (a *Auditor) Filter(next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serve(w, r, next) })
}

// requestInfo is the request's RequestInfo from the context or, when no
// stage resolved it, resolved here.
func requestInfo(r *http.Request) *filters.RequestInfo {
	if info, ok := filters.RequestInfoFrom(r.Context()); ok {
		return info
	}
	info, err := (filters.RequestInfoResolver{}).Resolve(r)
	if err != nil || info == nil {
		info = &filters.RequestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	}
	return info
}

// FailedAuthentication audits a request the authentication stage answers
// 401, which never reaches the audit stage (it sits after authentication):
// as kube-apiserver's failed-authentication handler, the policy is
// evaluated with no user, and one event is written at stage
// ResponseStarted, with an empty user and the 401 Status as responseStatus
// (kube-apiserver first notes "Authentication failed, attempted: ...", then
// the Unauthorized Status it writes replaces it; the e2e module compares the
// two servers' events). authn's FilterConfig.OnFailure is the place to call
// it.
func (a *Auditor) FailedAuthentication(r *http.Request) {
	if a == nil {
		return
	}
	info := requestInfo(r)
	cfg := a.eval.Evaluate(nil, info)
	a.metrics.level(cfg.Level)
	if !cfg.Level.AtLeast(LevelMetadata) {
		return
	}
	rec := a.newRecord(r, info, cfg, nil, nil)
	rec.ev.ResponseStatus = &ResponseStatus{Code: http.StatusUnauthorized, Status: "Failure",
		Reason: "Unauthorized", Message: "Unauthorized"}
	a.emit(r.Context(), rec, StageResponseStarted)
	a.release(rec)
}

func (a *Auditor) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	ctx := r.Context()
	info := requestInfo(r)
	user, _ := filters.UserFrom(ctx)
	var impersonated *filters.User
	if orig, ok := filters.ImpersonatorFrom(ctx); ok {
		user, impersonated = orig, user
	}
	cfg := a.eval.Evaluate(user, info)
	a.metrics.level(cfg.Level)
	if !cfg.Level.AtLeast(LevelMetadata) {
		next.ServeHTTP(w, r)
		return
	}
	rec := a.newRecord(r, info, cfg, user, impersonated)
	ctx = filters.ContextWithAuditAnnotationRecorder(ctx, rec)
	if !a.emit(ctx, rec, StageRequestReceived) {
		a.metrics.reject()
		a.release(rec)
		http.Error(w, fmt.Sprintf("Internal Server Error: %q: failed to store audit event", sanitize(r.RequestURI)), http.StatusInternalServerError)
		return
	}
	r = filters.RequestWithContext(r, ctx)
	if rec.wantsRequestBody(info) && r.Body != nil && r.Body != http.NoBody {
		rec.body = &teeBody{rc: r.Body, limit: a.maxObject}
		r.Body = rec.body
	}
	rw := &rec.rw
	rw.w, rw.a, rw.rec, rw.ctx = w, a, rec, ctx
	defer func() {
		if v := recover(); v != nil {
			rec.mu.Lock()
			rec.attachRequest()
			rec.ev.ResponseStatus = &ResponseStatus{Code: http.StatusInternalServerError, Status: "Failure",
				Reason: "InternalError", Message: fmt.Sprintf("APIServer panic'd: %v", v)}
			rec.mu.Unlock()
			a.emit(ctx, rec, StagePanic)
			a.release(rec)
			panic(v)
		}
		if !rw.started && rec.longRunning {
			rec.mu.Lock()
			rec.ev.ResponseStatus = connectionClosedEarly()
			rec.mu.Unlock()
			a.emit(ctx, rec, StageResponseStarted)
		}
		var lat, rejected string
		if a.stages != nil {
			code := 0
			if rw.started {
				code = rw.code
			}
			lat, rejected = a.stages(ctx, code)
		}
		rec.mu.Lock()
		rec.complete(rw, a.maxObject)
		if lat != "" {
			rec.annotate(StageLatenciesAnnotation, lat)
		}
		if rejected != "" {
			rec.annotate(RejectedByAnnotation, rejected)
		}
		rec.mu.Unlock()
		a.emit(ctx, rec, StageResponseComplete)
		a.release(rec)
	}()
	next.ServeHTTP(rw, r)
}

func connectionClosedEarly() *ResponseStatus {
	return &ResponseStatus{Code: http.StatusOK, Status: "Success", Message: "Connection closed early"}
}

// emit writes rec's event at stage to every backend, unless the policy
// omits the stage. It returns false when a blocking-strict backend failed.
func (a *Auditor) emit(ctx context.Context, rec *record, stage Stage) bool {
	if rec.cfg.Omits(stage) {
		return true
	}
	rec.mu.Lock()
	rec.ev.Stage = stage
	if stage == StageRequestReceived {
		rec.ev.StageTimestamp = rec.ev.RequestReceivedTimestamp
	} else {
		rec.ev.StageTimestamp = MicroTime{a.now()}
	}
	var head []byte // the head of the request's first event, while it is valid
	if rec.head != nil && rec.ev.ImpersonatedUser == rec.headImp {
		head = rec.head
	}
	buf := a.bufs.Get().(*[]byte)
	enc, hs, he := a.encode((*buf)[:0], &rec.ev, head)
	*buf = enc.full
	keep := rec.headBuf == nil && hs < he // the first event's buffer keeps its head for the next ones
	if keep {
		rec.headBuf, rec.head, rec.headImp = buf, (*buf)[hs:he], rec.ev.ImpersonatedUser
	}
	rec.mu.Unlock()
	if !a.reuse {
		// A batch backend keeps the bytes until written: it gets a copy of
		// the exact size, and the encoding buffer (grown once to the size of
		// an event) is reused.
		enc.full = bytes.Clone(enc.full)
	}
	a.metrics.event()
	ok := true
	for _, b := range a.backends {
		ok = b.process(ctx, &enc) && ok
	}
	if !keep { // every sink wrote, or was given a copy of, the bytes
		a.putBuf(buf)
	}
	return ok
}

// maxPooledEvent is the largest encoding buffer kept for reuse, so that one
// large RequestResponse event does not stay allocated.
const maxPooledEvent = 64 << 10

func (a *Auditor) putBuf(b *[]byte) {
	if cap(*b) <= maxPooledEvent {
		a.bufs.Put(b)
	}
}

// release returns the buffer that held rec's head, once rec wrote its last
// event.
func (a *Auditor) release(rec *record) {
	rec.mu.Lock()
	b := rec.headBuf
	rec.headBuf, rec.head = nil, nil
	rec.mu.Unlock()
	if b != nil {
		a.putBuf(b)
	}
}

// encode appends ev to dst (nil: a new buffer) as a JSON line and returns it, and its truncated form when a backend
// truncates and ev may be too large for it. Objects that are not valid JSON
// are dropped rather than losing the event.
func (a *Auditor) encode(dst []byte, ev *Event, head []byte) (e encoded, headStart, headEnd int) {
	if dst == nil {
		dst = make([]byte, 0, 1024+len(ev.RequestObject)+len(ev.ResponseObject))
	}
	full, headStart, headEnd, err := appendEventHead(dst, ev, head)
	if err != nil {
		ev.RequestObject, ev.ResponseObject = nil, nil
		full, headStart, headEnd, err = appendEventHead(full[:0], ev, head)
		if err != nil { // only a Status's details are left to fail
			a.logger.Error("audit event does not encode", zap.Error(err))
			full, headStart, headEnd = append(full[:0], "{}"...), 0, 0
		}
	}
	e = encoded{full: append(full, '\n')}
	if a.truncMin > 0 && int64(len(full)) > a.truncMin && ev.Level.AtLeast(LevelRequest) &&
		(ev.RequestObject != nil || ev.ResponseObject != nil) {
		e.truncated = encodeTruncated(ev)
	}
	return e, headStart, headEnd
}

// encodeTruncated returns ev without its objects, marked truncated, as a
// JSON line (nil if it does not encode). It is a function of its own so
// that the copy of ev is on its stack, not on every event's: handler
// goroutines start with small stacks, and a deeper frame on the hot path
// makes them grow (a copy of the stack) on every request.
//
//go:noinline
func encodeTruncated(ev *Event) []byte {
	t := *ev
	t.RequestObject, t.ResponseObject = nil, nil
	t.Annotations = maps.Clone(ev.Annotations)
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[TruncatedAnnotation] = "true"
	b, err := appendEvent(make([]byte, 0, 1024), &t)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// sanitize keeps a URI in a plain-text error from looking like HTML, as
// Kubernetes' InternalError does.
func sanitize(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;").Replace(s)
}
