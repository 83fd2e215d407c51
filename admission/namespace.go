// This file holds the NamespaceLifecycle plugin for aggregated mode: a
// namespaced create is rejected when its namespace does not exist in the
// cluster (404) or is terminating (403), with a small cache in front of the
// kube-apiserver.

package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/meta"
)

// NamespaceLifecycleConfig configures NewNamespaceLifecycle.
type NamespaceLifecycleConfig struct {
	// Namespaces reads namespaces from the cluster; required (see
	// KubeNamespaces).
	Namespaces NamespaceGetter
	// TTL is how long a namespace that exists and is active is cached;
	// zero means 10 seconds, negative no cache (for a getter that follows
	// the cluster, such as WatchedNamespaces). Missing and terminating
	// namespaces are never cached, so a create right after the namespace
	// appears works.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NamespaceLifecycle rejects writes that would create objects in missing or
// terminating namespaces. It is a Validator (and a Mutator that does nothing
// but reject early, as in Kubernetes, where it is both).
type NamespaceLifecycle struct {
	ns  NamespaceGetter
	ttl time.Duration
	now func() time.Time

	cacheMu sync.Mutex // guards cache
	cache   map[string]time.Time
}

var (
	_ Validator       = (*NamespaceLifecycle)(nil)
	_ Mutator         = (*NamespaceLifecycle)(nil)
	_ NamespaceGetter = (*KubeNamespaces)(nil)
)

// NewNamespaceLifecycle returns the plugin.
func NewNamespaceLifecycle(cfg NamespaceLifecycleConfig) (*NamespaceLifecycle, error) {
	if cfg.Namespaces == nil {
		return nil, fmt.Errorf("%w: NamespaceLifecycleConfig.Namespaces is required", ErrInvalidConfig)
	}
	l := &NamespaceLifecycle{ns: cfg.Namespaces, ttl: cfg.TTL, now: cfg.Now, cache: map[string]time.Time{}}
	if l.ttl == 0 {
		l.ttl = 10 * time.Second
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l, nil
}

// Name labels metrics.
func (l *NamespaceLifecycle) Name() string { return "NamespaceLifecycle" }

// Mutate rejects early, before other mutators run.
func (l *NamespaceLifecycle) Mutate(ctx context.Context, a *Attributes) error {
	return l.Validate(ctx, a)
}

// Validate rejects a create in a namespace that is missing or terminating.
func (l *NamespaceLifecycle) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || a.Namespace == "" || a.Subresource != "" {
		return nil
	}
	l.cacheMu.Lock()
	exp, ok := l.cache[a.Namespace]
	l.cacheMu.Unlock()
	if ok && l.now().Before(exp) {
		return nil
	}
	obj, err := l.ns.GetNamespace(ctx, a.Namespace)
	if err != nil {
		return meta.NewInternalError(err)
	}
	if obj == nil {
		return meta.NewNotFound(meta.GroupResource{Resource: "namespaces"}, a.Namespace)
	}
	status, _ := obj["status"].(map[string]any)
	if phase, _ := status["phase"].(string); phase == "Terminating" {
		st := forbidden(a, fmt.Sprintf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
		st.Details.Causes = append(st.Details.Causes, meta.StatusCause{Type: "NamespaceTerminating",
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace), Field: "metadata.namespace"})
		return st
	}
	if l.ttl > 0 {
		l.cacheMu.Lock()
		l.cache[a.Namespace] = l.now().Add(l.ttl)
		l.cacheMu.Unlock()
	}
	return nil
}

// KubeNamespaces reads namespaces from a kube-apiserver.
type KubeNamespaces struct{ Client *kubeclient.Client }

// GetNamespace GETs /api/v1/namespaces/<name>; 404 is (nil, nil).
func (k *KubeNamespaces) GetNamespace(ctx context.Context, name string) (map[string]any, error) {
	var out map[string]any
	err := k.Client.Get(ctx, "/api/v1/namespaces/"+name, &out)
	if errors.Is(err, kubeclient.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WatchedNamespaces is a NamespaceGetter that follows the cluster's
// namespaces (list and watch, kubeclient.Inform), as kube-apiserver's
// admission follows its namespace informer: a namespace that starts
// terminating refuses new content at once, and namespaceSelector reads
// labels from memory. A name it does not know (yet) is asked of the cluster,
// as kube's lifecycle plugin does for a namespace its informer has not seen.
// Run follows the cluster until ctx is done.
type WatchedNamespaces struct {
	Client *kubeclient.Client

	mu     sync.RWMutex
	byName map[string]map[string]any
}

// Run follows the cluster's namespaces until ctx is done.
func (w *WatchedNamespaces) Run(ctx context.Context) error {
	kubeclient.Inform(ctx, w.Client, "/api/v1/namespaces", 0, kubeclient.InformHandler{
		Replace: func(items []json.RawMessage) error {
			m := make(map[string]map[string]any, len(items))
			for _, raw := range items {
				ns, name, err := decodeNamespace(raw)
				if err != nil {
					return err
				}
				m[name] = ns
			}
			w.mu.Lock()
			w.byName = m
			w.mu.Unlock()
			return nil
		},
		Event: func(typ string, raw json.RawMessage) error {
			ns, name, err := decodeNamespace(raw)
			if err != nil {
				return err
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.byName == nil {
				w.byName = map[string]map[string]any{}
			}
			if typ == meta.WatchDeleted {
				delete(w.byName, name)
			} else {
				w.byName[name] = ns
			}
			return nil
		},
	})
	return nil
}

func decodeNamespace(raw json.RawMessage) (map[string]any, string, error) {
	var ns map[string]any
	if err := json.Unmarshal(raw, &ns); err != nil {
		return nil, "", fmt.Errorf("namespace: %w", err)
	}
	md, _ := ns["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return ns, name, nil
}

// GetNamespace returns the namespace as last seen, or asks the cluster when
// it has not seen it; a namespace that does not exist is (nil, nil). The
// returned object is shared: read it, do not change it.
func (w *WatchedNamespaces) GetNamespace(ctx context.Context, name string) (map[string]any, error) {
	w.mu.RLock()
	ns, ok := w.byName[name]
	w.mu.RUnlock()
	if ok {
		return ns, nil
	}
	return (&KubeNamespaces{Client: w.Client}).GetNamespace(ctx, name)
}
