// This file holds Delegated: the front-proxy and client CA settings of
// delegated authentication, read from the kube-apiserver's ConfigMap
// kube-system/extension-apiserver-authentication and kept current.

package authn

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/kubeclient"
)

// The ConfigMap kube-apiserver publishes its authentication settings in, and
// its keys.
const (
	AuthenticationConfigMapNamespace = "kube-system"
	AuthenticationConfigMapName      = "extension-apiserver-authentication"

	keyClientCA          = "client-ca-file"
	keyRequestHeaderCA   = "requestheader-client-ca-file"
	keyAllowedNames      = "requestheader-allowed-names"
	keyUsernameHeaders   = "requestheader-username-headers"
	keyUIDHeaders        = "requestheader-uid-headers"
	keyGroupHeaders      = "requestheader-group-headers"
	keyExtraHeaderPrefix = "requestheader-extra-headers-prefix"
)

// DelegatedConfig configures NewDelegated.
type DelegatedConfig struct {
	// Client reads the ConfigMap (in-cluster or --authentication-kubeconfig).
	// Required.
	Client *kubeclient.Client
	// Namespace and Name locate the ConfigMap. Zero means
	// kube-system/extension-apiserver-authentication.
	Namespace, Name string
	// Interval is how often the ConfigMap is read again. Zero means one
	// minute.
	Interval time.Duration
	// TolerateMissingRequestHeaderCA makes Ready succeed although the
	// ConfigMap has no request-header CA (a cluster without the aggregation
	// layer). Zero means such a server is not ready: it could authenticate
	// no request kube-aggregator proxies.
	TolerateMissingRequestHeaderCA bool
	// Logger receives start-up and change messages. nil means none.
	Logger *zap.Logger
}

// Delegated holds the settings read from the ConfigMap. Its providers
// (ClientCA, RequestHeaderCA, and itself as a RequestHeaderNamesProvider)
// read the latest good copy on every request, so rotated CAs and changed
// header names apply without a restart. It is safe for concurrent use.
type Delegated struct {
	cfg   DelegatedConfig
	path  string
	log   *zap.Logger
	state atomic.Pointer[delegatedState]

	// errMu guards lastErr.
	errMu   sync.Mutex
	lastErr error
}

// delegatedState is one reading of the ConfigMap. nil fields are absent keys.
type delegatedState struct {
	clientCA, requestHeaderCA *caSet
	names                     *RequestHeaderNames
	raw                       map[string]string
}

// caSet is a parsed CA bundle.
type caSet struct {
	pool  *x509.CertPool
	certs []*x509.Certificate
}

var _ RequestHeaderNamesProvider = (*Delegated)(nil)

// NewDelegated returns the delegated configuration for cfg. It reads nothing
// until Sync or Start.
func NewDelegated(cfg DelegatedConfig) (*Delegated, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: no client for the delegated configuration", ErrNotReady)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = AuthenticationConfigMapNamespace
	}
	if cfg.Name == "" {
		cfg.Name = AuthenticationConfigMapName
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Delegated{cfg: cfg, log: log, path: "/api/v1/namespaces/" + cfg.Namespace + "/configmaps/" + cfg.Name}, nil
}

// Sync reads the ConfigMap once. On failure the previous settings stay in
// use and the error is what Ready reports until a later Sync succeeds.
func (d *Delegated) Sync(ctx context.Context) error {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	err := d.cfg.Client.Get(ctx, d.path, &cm)
	if old := d.state.Load(); err == nil && old != nil && maps.Equal(old.raw, cm.Data) {
		// Unchanged: keep the same pools, so verified-chain caches keyed by
		// pool stay warm.
	} else if err == nil {
		var st *delegatedState
		if st, err = parseAuthConfigMap(cm.Data); err == nil {
			old := d.state.Swap(st)
			if old == nil || !maps.Equal(old.raw, st.raw) {
				d.log.Info("delegated authentication configuration loaded",
					zap.String("configmap", d.cfg.Namespace+"/"+d.cfg.Name),
					zap.Bool("clientCA", st.clientCA != nil), zap.Bool("requestHeaderCA", st.requestHeaderCA != nil))
				for _, m := range d.missing(st) {
					d.log.Warn("delegated authentication: " + m)
				}
			}
		}
	}
	if err != nil {
		err = d.explain(err)
		d.log.Error("reading delegated authentication configuration", zap.Error(err))
	}
	d.errMu.Lock()
	d.lastErr = err
	d.errMu.Unlock()
	return err
}

// explain adds what an operator should do to a lookup error.
func (d *Delegated) explain(err error) error {
	where := d.cfg.Namespace + "/" + d.cfg.Name
	switch {
	case errors.Is(err, kubeclient.ErrForbidden):
		return fmt.Errorf("reading ConfigMap %s is forbidden: bind the Role kube-system/extension-apiserver-authentication-reader to this server's service account: %w", where, err)
	case errors.Is(err, kubeclient.ErrUnauthorized):
		return fmt.Errorf("reading ConfigMap %s: the kube-apiserver rejected this server's credentials (--authentication-kubeconfig or the service-account token): %w", where, err)
	case errors.Is(err, kubeclient.ErrNotFound):
		return fmt.Errorf("ConfigMap %s does not exist: is this a kube-apiserver with the aggregation layer?: %w", where, err)
	}
	return fmt.Errorf("reading ConfigMap %s: %w", where, err)
}

// Start syncs now and then every Interval until ctx is done. A failing sync
// does not end it (Ready reports the failure); it returns nil when ctx is
// done.
func (d *Delegated) Start(ctx context.Context) error {
	_ = d.Sync(ctx)
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_ = d.Sync(ctx)
		}
	}
}

// Ready returns nil when the ConfigMap has been read and has what an
// aggregated server needs; otherwise an error wrapping ErrNotReady that says
// what is missing: not read yet (and why), or no request-header CA.
func (d *Delegated) Ready(context.Context) error {
	d.errMu.Lock()
	lastErr := d.lastErr
	d.errMu.Unlock()
	st := d.state.Load()
	if st == nil {
		if lastErr == nil {
			return fmt.Errorf("%w: ConfigMap %s/%s not read yet", ErrNotReady, d.cfg.Namespace, d.cfg.Name)
		}
		return fmt.Errorf("%w: %w", ErrNotReady, lastErr)
	}
	if st.requestHeaderCA == nil && !d.cfg.TolerateMissingRequestHeaderCA {
		return fmt.Errorf("%w: %s", ErrNotReady, d.missing(st)[0])
	}
	return nil
}

// missing lists what st lacks, for logs and Ready.
func (d *Delegated) missing(st *delegatedState) []string {
	var out []string
	where := d.cfg.Namespace + "/" + d.cfg.Name
	if st.requestHeaderCA == nil {
		out = append(out, fmt.Sprintf("no %s in ConfigMap %s: requests proxied by kube-aggregator cannot be authenticated (start kube-apiserver with --requestheader-client-ca-file)", keyRequestHeaderCA, where))
	}
	if st.clientCA == nil {
		out = append(out, fmt.Sprintf("no %s in ConfigMap %s: client certificates are not accepted", keyClientCA, where))
	}
	return out
}

// ClientCA returns a provider of the current client CA (nil pool while
// absent).
func (d *Delegated) ClientCA() CAProvider { return delegatedCA{d: d, requestHeader: false} }

// RequestHeaderCA returns a provider of the current request-header CA (nil
// pool while absent: no request is then authenticated by headers).
func (d *Delegated) RequestHeaderCA() CAProvider { return delegatedCA{d: d, requestHeader: true} }

// RequestHeaderNames returns the current allowed names and header names;
// nil while no request-header CA is configured.
func (d *Delegated) RequestHeaderNames() *RequestHeaderNames {
	st := d.state.Load()
	if st == nil {
		return nil
	}
	return st.names
}

type delegatedCA struct {
	d             *Delegated
	requestHeader bool
}

func (c delegatedCA) set() *caSet {
	st := c.d.state.Load()
	if st == nil {
		return nil
	}
	if c.requestHeader {
		return st.requestHeaderCA
	}
	return st.clientCA
}

// CertPool returns the current pool, or nil.
func (c delegatedCA) CertPool() *x509.CertPool {
	if s := c.set(); s != nil {
		return s.pool
	}
	return nil
}

// Certificates returns the current CA certificates, for CheckDistinctCAs.
func (c delegatedCA) Certificates() []*x509.Certificate {
	if s := c.set(); s != nil {
		return s.certs
	}
	return nil
}

// parseAuthConfigMap reads the ConfigMap's data as Kubernetes writes it: PEM
// bundles, and JSON string arrays for the header settings (empty means
// absent, and an absent header list gets Kubernetes' default).
func parseAuthConfigMap(data map[string]string) (*delegatedState, error) {
	st := &delegatedState{raw: data}
	var err error
	if st.clientCA, err = parseCASet(data[keyClientCA]); err != nil {
		return nil, fmt.Errorf("%s: %w", keyClientCA, err)
	}
	if st.requestHeaderCA, err = parseCASet(data[keyRequestHeaderCA]); err != nil {
		return nil, fmt.Errorf("%s: %w", keyRequestHeaderCA, err)
	}
	if st.requestHeaderCA == nil {
		return st, nil
	}
	var n RequestHeaderNames
	for key, dst := range map[string]*[]string{keyAllowedNames: &n.AllowedNames, keyUsernameHeaders: &n.UsernameHeaders,
		keyUIDHeaders: &n.UIDHeaders, keyGroupHeaders: &n.GroupHeaders, keyExtraHeaderPrefix: &n.ExtraHeaderPrefixes} {
		v := strings.TrimSpace(data[key])
		if v == "" {
			continue
		}
		if err := json.Unmarshal([]byte(v), dst); err != nil {
			return nil, fmt.Errorf("%s: not a JSON string array: %w", key, err)
		}
	}
	names := StaticRequestHeaderNames(n).RequestHeaderNames()
	st.names = names
	return st, nil
}

func parseCASet(pemData string) (*caSet, error) {
	if strings.TrimSpace(pemData) == "" {
		return nil, nil
	}
	var s caSet
	rest := []byte(pemData)
	s.pool = x509.NewCertPool()
	for {
		var block []byte
		block, rest = nextPEMCert(rest)
		if block == nil {
			break
		}
		c, err := x509.ParseCertificate(block)
		if err != nil {
			return nil, err
		}
		s.pool.AddCert(c)
		s.certs = append(s.certs, c)
	}
	if len(s.certs) == 0 {
		return nil, errors.New("no certificate in PEM bundle")
	}
	return &s, nil
}
