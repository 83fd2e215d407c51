// This file holds the reloading file sources: a serving certificate whose
// GetCertificate picks up new cert/key files, and a CA bundle whose pool does
// the same. A bad new file keeps the old material and reports the error.

package certs

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultReloadInterval is the least time between two looks at the files of a
// reloading source.
const DefaultReloadInterval = 5 * time.Second

// ReloadConfig configures a reloading file source.
type ReloadConfig struct {
	// Interval is the least time between two looks at the files, both on use
	// (GetCertificate, CertPool) and in the Start loop. Zero means
	// DefaultReloadInterval.
	Interval time.Duration
	// OnError is called with each new error a look at the files hits; the old
	// material stays in use. The same error is not reported twice in a row.
	// nil means errors are only kept for Err.
	OnError func(error)
	// OnReload is called after new material was loaded. nil means nothing.
	OnReload func()
}

// fileSource keeps the parsed form of a set of files and re-reads them at most
// once per interval. Files are compared by a hash of their contents, so a
// rewrite with the same bytes is no reload, and a rewrite within the same
// mtime tick is still seen.
type fileSource[T any] struct {
	files []string
	parse func(contents [][]byte) (*T, error)
	cfg   ReloadConfig

	cur       atomic.Pointer[T]
	nextCheck atomic.Int64 // monotonic nanoseconds since created

	created time.Time

	// checkMu guards the fields below and serializes looks at the files.
	checkMu     sync.Mutex
	sum         [sha256.Size]byte // of the contents cur was parsed from
	badSum      [sha256.Size]byte // of the last contents that failed to parse
	lastErr     error
	reportedErr string
}

func newFileSource[T any](files []string, cfg ReloadConfig, parse func([][]byte) (*T, error)) (*fileSource[T], error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultReloadInterval
	}
	s := &fileSource[T]{files: files, parse: parse, cfg: cfg, created: time.Now()}
	contents, sum, err := s.read()
	if err != nil {
		return nil, err
	}
	v, err := parse(contents)
	if err != nil {
		return nil, err
	}
	s.cur.Store(v)
	s.sum = sum
	s.nextCheck.Store(int64(time.Since(s.created) + cfg.Interval))
	return s, nil
}

func (s *fileSource[T]) read() ([][]byte, [sha256.Size]byte, error) {
	h := sha256.New()
	contents := make([][]byte, len(s.files))
	for i, f := range s.files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, [sha256.Size]byte{}, fmt.Errorf("certs: %w", err)
		}
		contents[i] = b
		_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
		h.Write(b)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return contents, sum, nil
}

// current returns the material, first looking at the files if the interval
// has passed. Only one caller looks; the others use what is there.
func (s *fileSource[T]) current() *T {
	if int64(time.Since(s.created)) >= s.nextCheck.Load() && s.checkMu.TryLock() {
		s.checkLocked()
		s.checkMu.Unlock()
	}
	return s.cur.Load()
}

// check looks at the files now.
func (s *fileSource[T]) check() error {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	return s.checkLocked()
}

func (s *fileSource[T]) checkLocked() error {
	s.nextCheck.Store(int64(time.Since(s.created) + s.cfg.Interval))
	contents, sum, err := s.read()
	switch {
	case err != nil:
	case sum == s.sum:
		s.lastErr, s.reportedErr = nil, ""
		return nil
	case sum == s.badSum:
		return s.lastErr // already reported
	default:
		v, perr := s.parse(contents)
		if perr == nil {
			s.cur.Store(v)
			s.sum = sum
			s.lastErr, s.reportedErr = nil, ""
			if s.cfg.OnReload != nil {
				s.cfg.OnReload()
			}
			return nil
		}
		s.badSum = sum
		err = perr
	}
	s.lastErr = err
	if msg := err.Error(); msg != s.reportedErr {
		s.reportedErr = msg
		if s.cfg.OnError != nil {
			s.cfg.OnError(err)
		}
	}
	return err
}

func (s *fileSource[T]) err() error {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	return s.lastErr
}

// start looks at the files every interval until ctx is done.
func (s *fileSource[T]) start(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_ = s.check() // reported through OnError and Err
		}
	}
}

// ServingCert is a serving certificate read from a cert and a key file and
// re-read when they change. Its GetCertificate method fits tls.Config.
//
// A ServingCert is safe for concurrent use.
type ServingCert struct {
	src *fileSource[tls.Certificate]
}

// NewServingCert loads certFile (the certificate, then any intermediates) and
// keyFile. It fails when they cannot be read or do not match; later bad files
// keep the current certificate.
func NewServingCert(certFile, keyFile string, cfg ReloadConfig) (*ServingCert, error) {
	src, err := newFileSource([]string{certFile, keyFile}, cfg, func(c [][]byte) (*tls.Certificate, error) {
		chain, key, err := parsePair(c[0], c[1])
		if err != nil {
			return nil, fmt.Errorf("certs: %s, %s: %w", certFile, keyFile, err)
		}
		tc := &tls.Certificate{PrivateKey: key, Leaf: chain[0]}
		for _, cert := range chain {
			tc.Certificate = append(tc.Certificate, cert.Raw)
		}
		return tc, nil
	})
	if err != nil {
		return nil, err
	}
	return &ServingCert{src: src}, nil
}

// GetCertificate returns the current certificate, for tls.Config.
func (s *ServingCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.src.current(), nil
}

// Current returns the current certificate; its Leaf is set.
func (s *ServingCert) Current() *tls.Certificate { return s.src.current() }

// Check looks at the files now and returns the error that keeps the current
// certificate in use, if any.
func (s *ServingCert) Check() error { return s.src.check() }

// Err returns the error of the last look at the files, nil if it loaded or
// found nothing new.
func (s *ServingCert) Err() error { return s.src.err() }

// Start looks at the files every interval until ctx is done, so changes are
// picked up (and errors reported) even while no handshake happens.
func (s *ServingCert) Start(ctx context.Context) error { return s.src.start(ctx) }

// caBundle is the parsed form of a CA bundle file.
type caBundle struct {
	pool  *x509.CertPool
	pem   []byte
	certs []*x509.Certificate
}

// CABundle is a PEM bundle of CA certificates read from a file and re-read
// when it changes. Its CertPool method fits authn.CAProvider.
//
// A CABundle is safe for concurrent use.
type CABundle struct {
	src *fileSource[caBundle]
}

// NewCABundle loads file, which must hold at least one certificate.
func NewCABundle(file string, cfg ReloadConfig) (*CABundle, error) {
	src, err := newFileSource([]string{file}, cfg, func(c [][]byte) (*caBundle, error) {
		cs, err := ParseCerts(c[0])
		if err != nil {
			return nil, fmt.Errorf("certs: %s: %w", file, err)
		}
		pool := x509.NewCertPool()
		for _, cert := range cs {
			pool.AddCert(cert)
		}
		return &caBundle{pool: pool, pem: c[0], certs: cs}, nil
	})
	if err != nil {
		return nil, err
	}
	return &CABundle{src: src}, nil
}

// CertPool returns the current pool. Callers must not modify it.
func (b *CABundle) CertPool() *x509.CertPool { return b.src.current().pool }

// PEM returns the current bundle as read from the file. Callers must not
// modify it.
func (b *CABundle) PEM() []byte { return b.src.current().pem }

// Certificates returns the current CA certificates. Callers must not modify
// the slice.
func (b *CABundle) Certificates() []*x509.Certificate { return b.src.current().certs }

// Check looks at the file now and returns the error that keeps the current
// bundle in use, if any.
func (b *CABundle) Check() error { return b.src.check() }

// Err returns the error of the last look at the file, nil if it loaded or
// found nothing new.
func (b *CABundle) Err() error { return b.src.err() }

// Start looks at the file every interval until ctx is done.
func (b *CABundle) Start(ctx context.Context) error { return b.src.start(ctx) }
