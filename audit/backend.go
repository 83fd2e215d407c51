// This file holds what the log and webhook backends share: the modes
// (batch, blocking, blocking-strict), the batching goroutine with its buffer
// and throttle, truncation, and the accounting of every lost event.

package audit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// Mode is how a backend hands events over (--audit-log-mode,
// --audit-webhook-mode).
type Mode string

// The modes, as kube-apiserver names them.
const (
	// ModeBatch buffers events and writes them from the backend's own
	// goroutine; a full buffer drops the event (counted, never blocking the
	// request).
	ModeBatch Mode = "batch"
	// ModeBlocking writes each event in the request's goroutine; a failure is
	// counted and logged, and the request proceeds.
	ModeBlocking Mode = "blocking"
	// ModeBlockingStrict is ModeBlocking, except that a failure to write the
	// RequestReceived event rejects the request with a 500.
	ModeBlockingStrict Mode = "blocking-strict"
)

// BatchConfig configures a backend's mode. Every zero field means the
// backend's kube-apiserver default.
type BatchConfig struct {
	// Mode is batch, blocking or blocking-strict. Zero means blocking for the
	// log backend and batch for the webhook backend.
	Mode Mode
	// BufferSize is how many events batch mode buffers before it drops. Zero
	// means 10000.
	BufferSize int
	// MaxBatchSize is the most events written at once. Zero means 1 for the
	// log backend and 400 for the webhook backend.
	MaxBatchSize int
	// MaxBatchWait is how long a batch that is not full waits for more
	// events. Zero means 30s.
	MaxBatchWait time.Duration
	// ThrottleQPS limits batches per second. Zero means none for the log
	// backend and 10 for the webhook backend; negative means none.
	ThrottleQPS float64
	// ThrottleBurst is the throttle's burst. Zero means 15 for the webhook
	// backend (1 when only ThrottleQPS is set for the log backend).
	ThrottleBurst int
}

// TruncateConfig configures truncation (--audit-*-truncate-*). The zero
// value truncates nothing.
type TruncateConfig struct {
	// Enabled turns truncation on: an event larger than MaxEventSize loses its
	// request and response objects and gains the annotation
	// audit.k8s.io/truncated: "true"; if still too large it is dropped and
	// counted; batches are split to stay under MaxBatchSize.
	Enabled bool
	// MaxEventSize is the largest event in bytes. Zero means 100 KiB.
	MaxEventSize int64
	// MaxBatchSize is the largest batch in bytes. Zero means 10 MiB.
	MaxBatchSize int64
}

func (t TruncateConfig) withDefaults() (TruncateConfig, error) {
	if t.MaxEventSize == 0 {
		t.MaxEventSize = 100 * 1024
	}
	if t.MaxBatchSize == 0 {
		t.MaxBatchSize = 10 * 1024 * 1024
	}
	if !t.Enabled {
		return t, nil
	}
	if t.MaxEventSize < 0 {
		return t, fmt.Errorf("%w: truncate max event size %d must be a positive number", ErrInvalidConfig, t.MaxEventSize)
	}
	if t.MaxBatchSize < t.MaxEventSize {
		return t, fmt.Errorf("%w: truncate max batch size %d must be greater than max event size (%d)", ErrInvalidConfig, t.MaxBatchSize, t.MaxEventSize)
	}
	return t, nil
}

// sink writes encoded events (each ending in '\n') synchronously and says
// how many it could not write. write is called from the batching goroutine
// (and, for the webhook, from several at once) and from many request
// goroutines in the blocking modes, so it must be safe for concurrent use.
type sink interface {
	write(ctx context.Context, events [][]byte) (lost int, err error)
	close() error
}

// The plugin names of apiserver_audit_error_total, as Kubernetes'.
const (
	pluginLog      = "log"
	pluginWebhook  = "webhook"
	pluginBuffered = "buffered"
	pluginTruncate = "truncate"
)

// backend is one sink with its mode, buffer and truncation.
type backend struct {
	plugin   string
	sink     sink
	mode     Mode
	truncate TruncateConfig
	metrics  *auditMetrics
	logger   *zap.Logger

	// Batch mode. Events queue in buf; an enqueuer that leaves wake or more
	// there signals full (one slot: signals collapse), so the batching
	// goroutine wakes once per batch, or when maxWait passes, rather than for
	// every event. wake is maxBatch, or half the buffer when that is less:
	// the events waiting for a batch never fill the buffer (a batch is then
	// smaller than maxBatch; none is lost for it).
	buf      chan []byte
	full     chan struct{}
	wake     int
	maxBatch int
	maxWait  time.Duration
	limiter  *rate.Limiter
	async    bool          // write batches concurrently (webhook)
	inflight chan struct{} // bounds concurrent async writes
	writes   sync.WaitGroup

	// closedMu guards closed: writers and enqueuers hold it shared, Start
	// takes it exclusively to stop them before the final flush.
	closedMu sync.RWMutex
	closed   bool

	lastDropLog atomic.Int64 // unix nanos of the last logged loss, to rate-limit logs
}

// maxAsyncWrites bounds the batches a webhook backend sends at once; when
// all are busy the batching goroutine waits and the buffer absorbs the rest.
const maxAsyncWrites = 16

type backendDefaults struct {
	mode     Mode
	maxBatch int
	qps      float64
	burst    int
	async    bool
}

func newBackend(plugin string, s sink, bc BatchConfig, tc TruncateConfig, d backendDefaults, m *auditMetrics, logger *zap.Logger) (*backend, error) {
	tc, err := tc.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", plugin, err)
	}
	b := &backend{plugin: plugin, sink: s, mode: bc.Mode, truncate: tc, metrics: m, logger: logger}
	if b.mode == "" {
		b.mode = d.mode
	}
	switch b.mode {
	case ModeBlocking, ModeBlockingStrict:
		return b, nil
	case ModeBatch:
	default:
		return nil, fmt.Errorf("%w: invalid audit %s mode %s, allowed modes are \"batch,blocking,blocking-strict\"", ErrInvalidConfig, plugin, b.mode)
	}
	size, maxBatch, wait, err := bc.sizes(plugin, d)
	if err != nil {
		return nil, err
	}
	qps, burst := bc.ThrottleQPS, bc.ThrottleBurst
	if qps == 0 {
		qps = d.qps
	}
	if burst == 0 {
		burst = d.burst
	}
	if qps > 0 {
		if burst <= 0 {
			burst = 1
		}
		b.limiter = rate.NewLimiter(rate.Limit(qps), burst)
	}
	b.buf, b.full, b.maxBatch, b.maxWait, b.async = make(chan []byte, size), make(chan struct{}, 1), maxBatch, wait, d.async
	b.wake = max(1, min(maxBatch, size/2))
	if b.async {
		b.inflight = make(chan struct{}, maxAsyncWrites)
	}
	return b, nil
}

// sizes returns the batch mode's buffer size, batch size and wait with
// zeros defaulted, or an error naming plugin for a negative one.
func (bc BatchConfig) sizes(plugin string, d backendDefaults) (size, maxBatch int, wait time.Duration, err error) {
	size, maxBatch, wait = bc.BufferSize, bc.MaxBatchSize, bc.MaxBatchWait
	if size == 0 {
		size = 10000
	}
	if maxBatch == 0 {
		maxBatch = d.maxBatch
	}
	if wait == 0 {
		wait = 30 * time.Second
	}
	if size < 0 || maxBatch < 0 || wait < 0 {
		err = fmt.Errorf("%w: audit %s batch buffer size, max size and max wait must be positive", ErrInvalidConfig, plugin)
	}
	return size, maxBatch, wait, err
}

// check is newBackend's validation without building anything.
func (bc BatchConfig) check(plugin string, tc TruncateConfig, d backendDefaults) error {
	if _, err := tc.withDefaults(); err != nil {
		return fmt.Errorf("audit %s: %w", plugin, err)
	}
	mode := bc.Mode
	if mode == "" {
		mode = d.mode
	}
	switch mode {
	case ModeBlocking, ModeBlockingStrict:
		return nil
	case ModeBatch:
	default:
		return fmt.Errorf("%w: invalid audit %s mode %s, allowed modes are \"batch,blocking,blocking-strict\"", ErrInvalidConfig, plugin, mode)
	}
	_, _, _, err := bc.sizes(plugin, d)
	return err
}

// encoded is one event as written: the full form and, when some backend
// truncates and the full form may be too large, the truncated one (nil when
// the event has no objects to drop).
type encoded struct {
	full, truncated []byte
}

// process hands one event to the backend. It returns false only when the
// backend is blocking-strict and the event could not be written.
func (b *backend) process(ctx context.Context, e *encoded) bool {
	data := e.full
	if b.truncate.Enabled && int64(len(data)-1) > b.truncate.MaxEventSize {
		data = e.truncated
		if data == nil || int64(len(data)-1) > b.truncate.MaxEventSize {
			b.lost(pluginTruncate, 1, ErrEventTooLarge)
			return true
		}
	}
	b.closedMu.RLock()
	defer b.closedMu.RUnlock()
	if b.mode == ModeBatch {
		if b.closed {
			b.lost(pluginBuffered, 1, ErrShutDown)
			return true
		}
		select {
		case b.buf <- data:
			if len(b.buf) >= b.wake {
				select {
				case b.full <- struct{}{}:
				default: // already signalled
				}
			}
		default:
			b.lost(pluginBuffered, 1, ErrBufferFull)
		}
		return true
	}
	if b.closed {
		b.lost(b.plugin, 1, ErrShutDown)
		return b.mode != ModeBlockingStrict
	}
	if n, err := b.writeOne(ctx, data); n > 0 {
		b.lost(b.plugin, n, err)
		return b.mode != ModeBlockingStrict
	}
	return true
}

// writeOne writes one event in the request's goroutine (the blocking
// modes), not cancelled with the request. The log sink, which needs no
// context, takes it without the slice and context a sink's write would cost
// each event.
func (b *backend) writeOne(ctx context.Context, data []byte) (int, error) {
	if ls, ok := b.sink.(*logSink); ok {
		return ls.writeLine(data)
	}
	return b.sink.write(context.WithoutCancel(ctx), [][]byte{data})
}

// lost counts n lost events and logs why, at most once every 10s per backend.
func (b *backend) lost(plugin string, n int, err error) {
	b.metrics.lost(plugin, n)
	now := time.Now().UnixNano()
	last := b.lastDropLog.Load()
	if now-last >= int64(10*time.Second) && b.lastDropLog.CompareAndSwap(last, now) {
		b.logger.Error("audit events lost", zap.String("plugin", plugin), zap.String("backend", b.plugin), zap.Int("count", n), zap.Error(err))
	}
}

// run is Start for one backend: in batch mode it collects and writes
// batches until ctx is done, then stops accepting events and writes
// everything still buffered; in every mode it then closes the sink.
func (b *backend) run(ctx context.Context) error {
	if b.mode == ModeBatch {
		timer := time.NewTimer(b.maxWait)
		defer timer.Stop()
		for {
			batch, done := b.collect(ctx, timer)
			b.dispatch(batch)
			if done {
				break
			}
		}
	} else {
		<-ctx.Done()
	}
	b.closedMu.Lock()
	b.closed = true
	b.closedMu.Unlock()
	if b.mode == ModeBatch {
		for {
			batch := b.drain()
			if len(batch) == 0 {
				break
			}
			b.dispatch(batch)
		}
		b.writes.Wait()
	}
	return b.sink.close()
}

// collect returns up to maxBatch events once wake are buffered, fewer when
// maxWait passes first or ctx is done (then done is true).
func (b *backend) collect(ctx context.Context, timer *time.Timer) (batch [][]byte, done bool) {
	timer.Reset(b.maxWait)
	for len(b.buf) < b.wake {
		select {
		case <-b.full: // look again: the signal may be older than the last batch
		case <-timer.C:
			return b.drain(), false
		case <-ctx.Done():
			return b.drain(), true
		}
	}
	return b.drain(), false
}

// drain returns up to maxBatch buffered events without waiting.
func (b *backend) drain() [][]byte {
	n := min(len(b.buf), b.maxBatch)
	if n == 0 {
		return nil
	}
	batch := make([][]byte, 0, n)
	for len(batch) < b.maxBatch {
		select {
		case e := <-b.buf:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// dispatch writes a batch after the throttle allows it, in its own goroutine
// for async backends.
func (b *backend) dispatch(batch [][]byte) {
	if len(batch) == 0 {
		return
	}
	if b.limiter != nil {
		_ = b.limiter.Wait(context.Background()) // cannot fail without a deadline
	}
	if !b.async {
		b.write(batch)
		return
	}
	b.inflight <- struct{}{}
	b.writes.Add(1)
	go func() {
		defer func() { <-b.inflight; b.writes.Done() }()
		b.write(batch)
	}()
}

func (b *backend) write(batch [][]byte) {
	if n, err := b.sink.write(context.Background(), batch); n > 0 {
		b.lost(b.plugin, n, err)
	}
}
