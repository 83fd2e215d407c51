// This file holds the EncryptionConfiguration file as a Transformer: read
// once, or re-read when it changes (--encryption-provider-config-automatic-reload).

package value

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// LoadEncryptionConfigurationFile reads the EncryptionConfiguration file at
// path and returns its transformer.
func LoadEncryptionConfigurationFile(path string) (Transformer, error) {
	t, _, err := loadFile(path)
	return t, err
}

func loadFile(path string) (Transformer, [32]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("error opening encryption provider configuration file %q: %w", path, err)
	}
	sum := sha256.Sum256(data)
	c, err := ParseEncryptionConfiguration(data)
	if err != nil {
		return nil, sum, fmt.Errorf("%s: %w", path, err)
	}
	t, err := c.Transformer()
	return t, sum, err
}

// Reloading is the transformer of an EncryptionConfiguration file that
// follows the file: Run re-reads it every interval and, when its content
// changed and it is valid, switches to it (values written since with the
// old configuration stay readable when the new one still lists their
// keys, as kube's rotation requires). A changed file that does not load
// keeps the last good configuration and is reported.
type Reloading struct {
	path     string
	interval time.Duration
	onError  func(error)
	onReload func()
	cur      atomic.Pointer[loaded]
}

type loaded struct {
	t   Transformer
	sum [32]byte
}

var _ Transformer = (*Reloading)(nil)

// ReloadOptions configures NewReloading. Zero values are defaults.
type ReloadOptions struct {
	// Interval is how often the file is read. Zero means a minute, as
	// kube-apiserver.
	Interval time.Duration
	// OnError receives a reload's error (the last good configuration stays).
	// Nil ignores it.
	OnError func(error)
	// OnReload is called after a new configuration took effect. Nil means
	// nothing.
	OnReload func()
}

// NewReloading loads the file at path, which must be valid now.
func NewReloading(path string, o ReloadOptions) (*Reloading, error) {
	t, sum, err := loadFile(path)
	if err != nil {
		return nil, err
	}
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	r := &Reloading{path: path, interval: o.Interval, onError: o.OnError, onReload: o.OnReload}
	r.cur.Store(&loaded{t: t, sum: sum})
	return r, nil
}

// Run re-reads the file every interval until ctx is done.
func (r *Reloading) Run(ctx context.Context) error {
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			r.check()
		}
	}
}

func (r *Reloading) check() {
	data, err := os.ReadFile(r.path)
	if err != nil {
		r.report(fmt.Errorf("error reading encryption provider configuration file %q: %w", r.path, err))
		return
	}
	if sha256.Sum256(data) == r.cur.Load().sum {
		return
	}
	t, sum, err := loadFile(r.path)
	if err != nil {
		r.report(err)
		return
	}
	r.cur.Store(&loaded{t: t, sum: sum})
	if r.onReload != nil {
		r.onReload()
	}
}

func (r *Reloading) report(err error) {
	if r.onError != nil {
		r.onError(err)
	}
}

// TransformToStorage uses the current configuration.
func (r *Reloading) TransformToStorage(ctx context.Context, data []byte, key string) ([]byte, error) {
	return r.cur.Load().t.TransformToStorage(ctx, data, key)
}

// TransformFromStorage uses the current configuration.
func (r *Reloading) TransformFromStorage(ctx context.Context, data []byte, key string) ([]byte, bool, error) {
	return r.cur.Load().t.TransformFromStorage(ctx, data, key)
}
