// This file holds the Transformer contract, the identity transformer and
// the per-resource Router.

package value

import (
	"context"
	"strings"
)

// Transformer converts object bytes to their stored form and back.
// Implementations are safe for concurrent use and do not retain data.
type Transformer interface {
	// TransformToStorage returns the stored form of data, the object's
	// bytes under key.
	TransformToStorage(ctx context.Context, data []byte, key string) ([]byte, error)
	// TransformFromStorage returns the object's bytes from their stored
	// form. stale is true when the value was not written by the transformer
	// that writes now (an older key, or plaintext): rewriting it would
	// change its stored form.
	TransformFromStorage(ctx context.Context, data []byte, key string) (out []byte, stale bool, err error)
}

// Identity stores bytes as they are.
type Identity struct{}

var _ Transformer = Identity{}

// TransformToStorage returns data.
func (Identity) TransformToStorage(_ context.Context, data []byte, _ string) ([]byte, error) {
	return data, nil
}

// TransformFromStorage returns data, never stale.
func (Identity) TransformFromStorage(_ context.Context, data []byte, _ string) ([]byte, bool, error) {
	return data, false, nil
}

// Route sends the keys under Prefix to Transformer.
type Route struct {
	// Prefix is a key prefix, such as storage.ResourcePrefix(group,
	// resource, ""); it matches whole segments (it matches /a/b/c, not
	// /a/bc).
	Prefix string
	// Transformer handles the keys under Prefix.
	Transformer Transformer
}

// Router picks, for each key, the transformer of the longest route whose
// prefix holds the key: encryption configured per resource. Keys under no
// route are stored as they are.
type Router []Route

var _ Transformer = Router(nil)

func (r Router) pick(key string) Transformer {
	var best Transformer = Identity{}
	n := -1
	for _, rt := range r {
		p := strings.TrimSuffix(rt.Prefix, "/")
		if len(p) > n && (key == p || strings.HasPrefix(key, p+"/")) {
			best, n = rt.Transformer, len(p)
		}
	}
	return best
}

// TransformToStorage uses the transformer of key's route.
func (r Router) TransformToStorage(ctx context.Context, data []byte, key string) ([]byte, error) {
	return r.pick(key).TransformToStorage(ctx, data, key)
}

// TransformFromStorage uses the transformer of key's route.
func (r Router) TransformFromStorage(ctx context.Context, data []byte, key string) ([]byte, bool, error) {
	return r.pick(key).TransformFromStorage(ctx, data, key)
}
