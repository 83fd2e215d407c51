package apiservice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/kubeclient"
)

// Path is where the cluster serves APIServices.
const Path = "/apis/apiregistration.k8s.io/v1/apiservices"

// Service is the Service in front of the server.
type Service struct {
	Namespace, Name string
	// Port is the Service port the APIService names. Zero means 443.
	Port int32
}

// ParseService reads "name.namespace" (the form of --service).
func ParseService(s string) (Service, error) {
	name, ns, ok := strings.Cut(s, ".")
	if !ok || name == "" || ns == "" || strings.Contains(ns, ".") {
		return Service{}, fmt.Errorf("%q: want name.namespace", s)
	}
	return Service{Namespace: ns, Name: name}, nil
}

// Host is <name>.<namespace>.svc, the name kube-aggregator verifies on the
// serving certificate.
func (s Service) Host() string { return s.Name + "." + s.Namespace + ".svc" }

// Hosts are the names a serving certificate for the Service carries: the
// short name, name.namespace, the .svc name and the cluster.local one.
func (s Service) Hosts() []string {
	return []string{s.Name, s.Name + "." + s.Namespace, s.Host(), s.Host() + ".cluster.local"}
}

// GroupVersion is one served API group version.
type GroupVersion struct{ Group, Version string }

// Config says what to register.
type Config struct {
	// Client reaches the cluster (required).
	Client *kubeclient.Client
	// Service is the Service in front of the server (Namespace and Name
	// required).
	Service Service
	// Versions are the served group versions, one APIService each
	// (required).
	Versions []GroupVersion
	// CABundle returns the PEM bundle of the CA that signed the serving
	// certificate. It is called at every attempt, so a renewed CA is put
	// in (required).
	CABundle func() ([]byte, error)
	// GroupPriorityMinimum and VersionPriority are the APIServices'
	// priorities. Zero means kube's for CRDs: 1000 and 100.
	GroupPriorityMinimum, VersionPriority int32
	// ManagedBy is the app.kubernetes.io/managed-by label. Zero means
	// "annex".
	ManagedBy string
	// Interval is how often registered APIServices are checked again.
	// Zero means 5 minutes.
	Interval time.Duration
	// Logger logs each registration and failure. Nil means none.
	Logger *zap.Logger
}

// APIService is the part of apiregistration.k8s.io/v1 APIService this
// package writes.
type APIService struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   Meta   `json:"metadata"`
	Spec       Spec   `json:"spec"`
}

// Meta is an APIService's metadata.
type Meta struct {
	Name            string            `json:"name"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
}

// Spec is an APIService's spec.
type Spec struct {
	Group                 string     `json:"group"`
	Version               string     `json:"version"`
	Service               ServiceRef `json:"service"`
	CABundle              []byte     `json:"caBundle"` // base64 in JSON, as the API wants
	GroupPriorityMinimum  int32      `json:"groupPriorityMinimum"`
	VersionPriority       int32      `json:"versionPriority"`
	InsecureSkipTLSVerify bool       `json:"insecureSkipTLSVerify,omitempty"`
}

// ServiceRef is spec.service.
type ServiceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Port      int32  `json:"port"`
}

// Registrar keeps a server's APIServices registered.
type Registrar struct {
	cfg Config

	mu      sync.Mutex
	lastErr error // of the last attempt; errNotYet before the first
}

var errNotYet = errors.New("the APIServices are not registered yet")

// New checks cfg and fills its defaults.
func New(cfg Config) (*Registrar, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("apiservice: Client is required (delegated mode)"))
	}
	if cfg.Service.Namespace == "" || cfg.Service.Name == "" {
		errs = append(errs, errors.New("apiservice: Service needs a Namespace and a Name"))
	}
	if len(cfg.Versions) == 0 {
		errs = append(errs, errors.New("apiservice: no served group version to register"))
	}
	if cfg.CABundle == nil {
		errs = append(errs, errors.New("apiservice: CABundle is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Service.Port == 0 {
		cfg.Service.Port = 443
	}
	if cfg.GroupPriorityMinimum == 0 {
		cfg.GroupPriorityMinimum = 1000
	}
	if cfg.VersionPriority == 0 {
		cfg.VersionPriority = 100
	}
	if cfg.ManagedBy == "" {
		cfg.ManagedBy = "annex"
	}
	if cfg.Interval == 0 {
		cfg.Interval = 5 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	cfg.Versions = slices.Clone(cfg.Versions)
	slices.SortFunc(cfg.Versions, func(a, b GroupVersion) int {
		return strings.Compare(a.Group+"/"+a.Version, b.Group+"/"+b.Version)
	})
	cfg.Versions = slices.Compact(cfg.Versions)
	return &Registrar{cfg: cfg, lastErr: errNotYet}, nil
}

// APIServices are the objects r writes, with caBundle ca.
func (r *Registrar) APIServices(ca []byte) []APIService {
	c := r.cfg
	out := make([]APIService, 0, len(c.Versions))
	for _, gv := range c.Versions {
		out = append(out, APIService{
			APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService",
			Metadata: Meta{Name: gv.Version + "." + gv.Group, Labels: map[string]string{"app.kubernetes.io/managed-by": c.ManagedBy}},
			Spec: Spec{Group: gv.Group, Version: gv.Version,
				Service:  ServiceRef{Namespace: c.Service.Namespace, Name: c.Service.Name, Port: c.Service.Port},
				CABundle: ca, GroupPriorityMinimum: c.GroupPriorityMinimum, VersionPriority: c.VersionPriority},
		})
	}
	return out
}

// Register writes every APIService once: it creates the missing ones and
// updates the spec of the others (keeping their metadata, with the
// resourceVersion read as precondition). It returns every failure, joined.
func (r *Registrar) Register(ctx context.Context) error {
	ca, err := r.cfg.CABundle()
	if err == nil && len(ca) == 0 {
		err = errors.New("the serving CA bundle is empty")
	}
	if err != nil {
		err = fmt.Errorf("apiservice: caBundle: %w", err)
		r.setErr(err)
		return err
	}
	var errs []error
	for _, want := range r.APIServices(ca) {
		created, err := r.write(ctx, want)
		if err != nil {
			errs = append(errs, fmt.Errorf("APIService %s: %w", want.Metadata.Name, err))
			continue
		}
		r.cfg.Logger.Info("APIService registered", zap.String("apiservice", want.Metadata.Name), zap.Bool("created", created),
			zap.String("service", want.Spec.Service.Namespace+"/"+want.Spec.Service.Name))
	}
	err = errors.Join(errs...)
	r.setErr(err)
	return err
}

func (r *Registrar) write(ctx context.Context, want APIService) (created bool, err error) {
	c := r.cfg.Client
	var have APIService
	err = c.Get(ctx, Path+"/"+want.Metadata.Name, &have)
	if errors.Is(err, kubeclient.ErrNotFound) {
		return true, c.Post(ctx, Path, want, nil)
	}
	if err != nil {
		return false, err
	}
	if specEqual(have.Spec, want.Spec) {
		return false, nil
	}
	upd := want
	upd.Metadata = have.Metadata
	return false, c.Do(ctx, "PUT", Path+"/"+want.Metadata.Name, upd, nil)
}

func specEqual(a, b Spec) bool {
	return a.Group == b.Group && a.Version == b.Version && a.Service == b.Service && string(a.CABundle) == string(b.CABundle) &&
		a.GroupPriorityMinimum == b.GroupPriorityMinimum && a.VersionPriority == b.VersionPriority && a.InsecureSkipTLSVerify == b.InsecureSkipTLSVerify
}

func (r *Registrar) setErr(err error) {
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
}

// Ready is nil once the last attempt wrote every APIService; before the
// first, and after a failed one, it says why not.
func (r *Registrar) Ready(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// Run registers until ctx ends: after a failure it tries again with backoff
// (1s doubling to 30s), after a success every Interval. It returns nil when
// ctx ends.
func (r *Registrar) Run(ctx context.Context) error {
	wait := time.Second
	for {
		next := r.cfg.Interval
		if err := r.Register(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("registering the APIServices failed: the server needs create, get and update on apiservices.apiregistration.k8s.io", zap.Error(err))
			next, wait = wait, min(2*wait, 30*time.Second)
		} else {
			wait = time.Second
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
