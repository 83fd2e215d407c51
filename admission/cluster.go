// This file holds Cluster: following the cluster's own admission
// configuration in delegated mode, as the admission plugins of a server
// built on k8s.io/apiserver do. It lists and watches (kubeclient.Inform)
// MutatingWebhookConfigurations, ValidatingWebhookConfigurations,
// ValidatingAdmissionPolicies and MutatingAdmissionPolicies with their
// bindings, at the version of each the cluster serves (discovery), and the
// objects policies name as params; after every change it compiles them,
// with the program's own configuration, into the four plugins it hands to
// the chain.

package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/meta"
)

// ClusterConfig configures FollowCluster. The zero value is no admission
// configuration at all.
type ClusterConfig struct {
	// Client reaches the kube-apiserver whose configuration is followed;
	// nil means none is: the plugins enforce the program's configuration
	// alone (and those with none are left out). Its identity needs get, list and watch on the four
	// configuration kinds (admissionregistration.k8s.io) and on the kinds
	// policies name as params, and create on services/proxy for webhooks
	// named by service.
	Client *kubeclient.Client
	// Policies and Bindings (with Params), and Webhooks are the program's
	// own configuration: they are added to the cluster's, never replaced
	// by it. A program policy or webhook that does not compile is an error
	// of FollowCluster; one from the cluster is logged and fails, under its
	// failurePolicy, the requests it matches.
	Policies []Policy
	Bindings []Binding
	Webhooks []WebhookConfiguration
	// Policy configures policy evaluation (Params, Namespaces, Budget,
	// Authorizer); ParamSource is the cluster's, set by FollowCluster.
	Policy PolicyOptions
	// Configuration, when not nil, gives the credentials presented to
	// mutating and validating webhooks (it overrides Webhook.Credentials).
	Configuration *Configuration
	// Webhook configures webhook calls (Namespaces, Credentials,
	// Authorizer). The cluster's webhooks named by service are reached
	// through the cluster's service proxy unless ResolveService is set.
	Webhook WebhookOptions
	// Disabled names plugins (kube's names, PluginNames) that are off:
	// their kinds are neither followed nor enforced.
	Disabled []string
	// Logger hears what is followed, what the cluster does not serve and
	// what fails; nil means no logging.
	Logger *zap.Logger
	// ReadyWait is how long a write waits for the first sync before it is
	// refused with kube's 403 "not yet ready to handle request"; zero
	// means 10 seconds, kube's WaitForReady.
	ReadyWait time.Duration
	// Rediscover is how often the served versions are read again (a
	// cluster upgraded to serve MutatingAdmissionPolicy v1 is followed at
	// v1 from then on); zero means 5 minutes.
	Rediscover time.Duration
	// Retry is the informers' first wait after a failure (doubling up to
	// 30s); zero means one second.
	Retry time.Duration
}

// admissionGroup is the group of the followed kinds.
const admissionGroup = "admissionregistration.k8s.io"

// followedKind is one resource of admissionGroup a plugin follows.
type followedKind struct {
	resource string
	plugin   string
	// versions the kind has been served at, in order of preference.
	versions []string
}

func followedKinds() []followedKind {
	policy := []string{"v1", "v1beta1", "v1alpha1"}
	return []followedKind{
		{"mutatingadmissionpolicies", "MutatingAdmissionPolicy", policy},
		{"mutatingadmissionpolicybindings", "MutatingAdmissionPolicy", policy},
		{"mutatingwebhookconfigurations", "MutatingAdmissionWebhook", []string{"v1"}},
		{"validatingadmissionpolicies", "ValidatingAdmissionPolicy", policy},
		{"validatingadmissionpolicybindings", "ValidatingAdmissionPolicy", policy},
		{"validatingwebhookconfigurations", "ValidatingAdmissionWebhook", []string{"v1"}},
	}
}

// kindState is what is known of one followed resource.
type kindState struct {
	followedKind
	// version is the one followed; "" until discovery, or when the
	// cluster serves none (then the kind is empty and synced).
	version string
	synced  bool
	objects map[string]json.RawMessage // by name
}

// Cluster follows the cluster's admission configuration and enforces it,
// with the program's, through the plugins Mutators and Validators return.
// Until every followed kind has been listed once they refuse writes (after
// waiting ReadyWait) with kube's 403; after that, when the cluster cannot
// be reached, the configuration last seen stays enforced. Run follows the
// cluster; Ready and Note report on it for /readyz.
type Cluster struct {
	cfg  ClusterConfig
	log  *zap.Logger
	prog struct {
		mutating, validating []*compiledPolicy
		mutHooks, valHooks   []*hook
	}
	plugins []*followed
	params  *clusterParams

	mu          sync.Mutex // guards kinds, discovered, discoverErr, informErr, dirty
	kinds       map[string]*kindState
	discovered  bool
	discoverErr error
	informErr   map[string]error
	dirty       map[string]bool // plugins to rebuild
	kick        chan struct{}
}

var (
	_ Mutator   = (*followed)(nil)
	_ Validator = (*followed)(nil)
)

// FollowCluster compiles the program's configuration and prepares to
// follow the cluster's; Run starts following.
func FollowCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.ReadyWait == 0 {
		cfg.ReadyWait = 10 * time.Second
	}
	if cfg.Rediscover == 0 {
		cfg.Rediscover = 5 * time.Minute
	}
	if cfg.Policy.Budget == 0 {
		cfg.Policy.Budget = RuntimeCELCostBudget
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger, kinds: map[string]*kindState{}, informErr: map[string]error{},
		dirty: map[string]bool{}, kick: make(chan struct{}, 1)}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	if cfg.Client != nil {
		c.params = &clusterParams{client: cfg.Client, log: c.log, retry: cfg.Retry, kinds: map[ParamKind]*paramState{}}
		c.cfg.Policy.ParamSource = c.params
	}
	var err error
	if c.prog.mutating, err = compilePolicies(cfg.Policies, cfg.Bindings, "MutatingAdmissionPolicy"); err != nil {
		return nil, err
	}
	if c.prog.validating, err = compilePolicies(cfg.Policies, cfg.Bindings, "ValidatingAdmissionPolicy"); err != nil {
		return nil, err
	}
	if c.prog.mutHooks, err = prepareHooks(cfg.Webhooks, c.webhookOptions(true), true, nil); err != nil {
		return nil, err
	}
	if c.prog.valHooks, err = prepareHooks(cfg.Webhooks, c.webhookOptions(false), false, nil); err != nil {
		return nil, err
	}
	for _, k := range followedKinds() {
		if cfg.Client != nil && !slices.Contains(cfg.Disabled, k.plugin) {
			c.kinds[k.resource] = &kindState{followedKind: k}
		}
	}
	own := map[string]int{"MutatingAdmissionPolicy": len(c.prog.mutating), "ValidatingAdmissionPolicy": len(c.prog.validating),
		"MutatingAdmissionWebhook": len(c.prog.mutHooks), "ValidatingAdmissionWebhook": len(c.prog.valHooks)}
	for _, name := range PluginNames() {
		if name == "NamespaceLifecycle" || slices.Contains(cfg.Disabled, name) || cfg.Client == nil && own[name] == 0 {
			continue
		}
		f := &followed{c: c, plugin: name, ready: make(chan struct{})}
		c.plugins = append(c.plugins, f)
		c.build(f) // the program's configuration alone, until the cluster's is in
	}
	if cfg.Client == nil {
		c.discovered = true
		for _, f := range c.plugins {
			c.build(f) // ready: nothing to follow
		}
	}
	return c, nil
}

// webhookOptions are the options of the program's mutating or validating
// webhooks: Webhook's, with Configuration's credentials.
func (c *Cluster) webhookOptions(mutating bool) WebhookOptions {
	opts := c.cfg.Webhook
	if conf := c.cfg.Configuration; conf != nil {
		opts.Credentials = conf.ValidatingCredentials
		if mutating {
			opts.Credentials = conf.MutatingCredentials
		}
	}
	return opts
}

// Mutators are the mutating plugins, in kube's order:
// MutatingAdmissionPolicy, MutatingAdmissionWebhook (those not disabled).
func (c *Cluster) Mutators() []Mutator {
	var out []Mutator
	for _, f := range c.plugins {
		if strings.HasPrefix(f.plugin, "Mutating") {
			out = append(out, f)
		}
	}
	return out
}

// Validators are the validating plugins, in kube's order:
// ValidatingAdmissionPolicy, ValidatingAdmissionWebhook (those not
// disabled).
func (c *Cluster) Validators() []Validator {
	var out []Validator
	for _, f := range c.plugins {
		if strings.HasPrefix(f.plugin, "Validating") {
			out = append(out, f)
		}
	}
	return out
}

// Ready is nil once every followed kind has been listed once (a kind the
// cluster does not serve counts as listed, empty); before that it names
// what has not.
func (c *Cluster) Ready(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.discovered {
		if c.discoverErr != nil {
			return fmt.Errorf("discovery of %s: %v", admissionGroup, c.discoverErr)
		}
		return fmt.Errorf("discovery of %s has not answered yet", admissionGroup)
	}
	var missing []string
	for _, k := range c.sortedKinds() {
		if !k.synced {
			w := k.resource + "." + k.version
			if err := c.informErr[k.resource]; err != nil {
				w += " (" + err.Error() + ")"
			}
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not listed from the cluster yet: %s", strings.Join(missing, ", "))
	}
	return nil
}

// Note says which kinds the cluster does not serve (followed as empty) and
// which it currently fails to answer for (their last configuration stays
// enforced).
func (c *Cluster) Note() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var notServed, failing []string
	for _, k := range c.sortedKinds() {
		if c.discovered && k.version == "" {
			notServed = append(notServed, k.resource)
		}
		if k.synced && c.informErr[k.resource] != nil {
			failing = append(failing, k.resource)
		}
	}
	var parts []string
	if len(notServed) > 0 {
		parts = append(parts, "not served by the cluster, followed as empty: "+strings.Join(notServed, ", "))
	}
	if len(failing) > 0 {
		parts = append(parts, "the cluster does not answer, the last configuration seen is enforced: "+strings.Join(failing, ", "))
	}
	return strings.Join(parts, "; ")
}

func (c *Cluster) sortedKinds() []*kindState {
	out := make([]*kindState, 0, len(c.kinds))
	for _, k := range c.kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].resource < out[j].resource })
	return out
}

// Run follows the cluster until ctx is done: discovery, then an informer
// per served kind; discovery again every Rediscover, the informers
// restarted when a served version changed.
func (c *Cluster) Run(ctx context.Context) error {
	if c.cfg.Client == nil {
		return nil
	}
	c.params.start(ctx)
	go c.rebuildLoop(ctx)
	wait := c.cfg.Retry
	if wait <= 0 {
		wait = time.Second
	}
	stop := func() {}
	var informers sync.WaitGroup
	defer func() { stop(); informers.Wait() }()
	var current map[string]string
	for {
		served, err := c.discover(ctx)
		if ctx.Err() != nil {
			return nil
		}
		next := c.cfg.Rediscover
		switch {
		case err != nil:
			c.mu.Lock()
			c.discoverErr = err
			c.mu.Unlock()
			c.log.Warn("admission: discovery of the cluster's admission configuration failed; retrying", zap.Error(err))
			next = wait
			wait = min(2*wait, 30*time.Second)
		case !mapsEqual(served, current):
			current = served
			stop()
			informers.Wait()
			ictx, cancel := context.WithCancel(ctx)
			stop = cancel
			c.follow(ictx, served, &informers)
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

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// discover returns the version each followed kind is served at ("" when
// none).
func (c *Cluster) discover(ctx context.Context) (map[string]string, error) {
	served := map[string][]string{} // version -> resources
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		var list resourceList
		err := c.cfg.Client.Get(ctx, "/apis/"+admissionGroup+"/"+v, &list)
		if errors.Is(err, kubeclient.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, r := range list.Resources {
			served[v] = append(served[v], r.Name)
		}
	}
	out := map[string]string{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kinds {
		out[k.resource] = ""
		for _, v := range k.versions {
			if slices.Contains(served[v], k.resource) {
				out[k.resource] = v
				break
			}
		}
	}
	return out, nil
}

// resourceList is the part of an APIResourceList discovery reads.
type resourceList struct {
	Resources []struct {
		Name       string `json:"name"`
		Kind       string `json:"kind"`
		Namespaced bool   `json:"namespaced"`
	} `json:"resources"`
}

// follow starts an informer per served kind; a kind not served is empty.
func (c *Cluster) follow(ctx context.Context, served map[string]string, wg *sync.WaitGroup) {
	c.mu.Lock()
	c.discovered, c.discoverErr = true, nil
	for _, k := range c.sortedKinds() {
		v := served[k.resource]
		if v == k.version && k.synced {
			continue // the same version: its objects stay until the re-list
		}
		k.version, k.synced = v, false
		if v == "" {
			k.synced, k.objects = true, nil
			c.log.Warn("admission: the cluster does not serve this configuration kind; it is followed as empty",
				zap.String("resource", k.resource+"."+admissionGroup), zap.Strings("versions", k.versions))
			c.dirty[k.plugin] = true
		}
	}
	kinds := c.sortedKinds()
	c.mu.Unlock()
	c.kickRebuild()
	for _, k := range kinds {
		if k.version == "" {
			continue
		}
		path := "/apis/" + admissionGroup + "/" + k.version + "/" + k.resource
		c.log.Info("admission: following the cluster's configuration", zap.String("path", path))
		wg.Add(1)
		go func() {
			defer wg.Done()
			kubeclient.Inform(ctx, c.cfg.Client, path, c.cfg.Retry, c.informHandler(k))
		}()
	}
}

func (c *Cluster) informHandler(k *kindState) kubeclient.InformHandler {
	return kubeclient.InformHandler{
		Replace: func(items []json.RawMessage) error {
			objs := make(map[string]json.RawMessage, len(items))
			for _, raw := range items {
				objs[nameOfRaw(raw)] = raw
			}
			c.mu.Lock()
			k.objects, k.synced = objs, true
			delete(c.informErr, k.resource)
			c.dirty[k.plugin] = true
			c.mu.Unlock()
			c.kickRebuild()
			return nil
		},
		Event: func(typ string, raw json.RawMessage) error {
			c.mu.Lock()
			if k.objects == nil {
				k.objects = map[string]json.RawMessage{}
			}
			if typ == meta.WatchDeleted {
				delete(k.objects, nameOfRaw(raw))
			} else {
				k.objects[nameOfRaw(raw)] = raw
			}
			delete(c.informErr, k.resource)
			c.dirty[k.plugin] = true
			c.mu.Unlock()
			c.kickRebuild()
			return nil
		},
		OnError: func(err error) {
			c.mu.Lock()
			c.informErr[k.resource] = err
			c.mu.Unlock()
			c.log.Warn("admission: cannot follow the cluster's configuration; the last seen stays enforced",
				zap.String("resource", k.resource+"."+admissionGroup), zap.Error(err))
		},
	}
}

func nameOfRaw(raw json.RawMessage) string {
	var m struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Metadata.Name
}

func (c *Cluster) kickRebuild() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// rebuildLoop recompiles the plugins whose kinds changed.
func (c *Cluster) rebuildLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		c.mu.Lock()
		dirty := c.dirty
		c.dirty = map[string]bool{}
		c.mu.Unlock()
		for _, f := range c.plugins {
			if dirty[f.plugin] {
				c.build(f)
			}
		}
	}
}

// objectsOf decodes the objects of resource, sorted by name.
func objectsOf[T any](c *Cluster, resource string) []T {
	c.mu.Lock()
	k := c.kinds[resource]
	var raws []json.RawMessage
	if k != nil {
		names := make([]string, 0, len(k.objects))
		for n := range k.objects {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			raws = append(raws, k.objects[n])
		}
	}
	c.mu.Unlock()
	var out []T
	for _, raw := range raws {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			c.log.Error("admission: cannot read an object of the cluster's configuration", zap.String("resource", resource), zap.Error(err))
			continue
		}
		out = append(out, v)
	}
	return out
}

// build compiles the cluster's objects of f's kinds with the program's and
// swaps them in; once every kind f follows is synced, f is ready.
func (c *Cluster) build(f *followed) {
	onBroken := func(err error) {
		c.log.Error("admission: a webhook of the cluster cannot be prepared; it fails the requests it matches under its failurePolicy", zap.Error(err))
	}
	var p plugin
	switch f.plugin {
	case "MutatingAdmissionPolicy", "ValidatingAdmissionPolicy":
		prefix := strings.ToLower(strings.TrimSuffix(f.plugin, "AdmissionPolicy"))
		cps := compileEach(objectsOf[Policy](c, prefix+"admissionpolicies"), objectsOf[Binding](c, prefix+"admissionpolicybindings"), f.plugin)
		for _, cp := range cps {
			if cp.broken != nil {
				c.log.Error("admission: a policy of the cluster does not compile; it fails the requests it matches under its failurePolicy",
					zap.String("policy", cp.Metadata.Name), zap.Error(cp.broken))
			}
		}
		own := c.prog.validating
		if f.plugin == "MutatingAdmissionPolicy" {
			own = c.prog.mutating
		}
		cps = append(slices.Clone(own), cps...)
		sortPolicies(cps)
		if c.params != nil {
			c.params.want(cps)
		}
		e := policyEngine{policies: cps, opts: c.cfg.Policy, kind: f.plugin, metrics: f.metrics.Load()}
		if f.plugin == "MutatingAdmissionPolicy" {
			p = &MutatingPolicies{e}
		} else {
			p = &ValidatingPolicies{e}
		}
	default:
		mutating := f.plugin == "MutatingAdmissionWebhook"
		res, own := "validatingwebhookconfigurations", c.prog.valHooks
		if mutating {
			res, own = "mutatingwebhookconfigurations", c.prog.mutHooks
		}
		opts := c.webhookOptions(mutating)
		if opts.ResolveService == nil {
			opts.ServiceProxy = c.cfg.Client
		}
		hooks, _ := prepareHooks(objectsOf[WebhookConfiguration](c, res), opts, mutating, onBroken)
		hooks = append(slices.Clone(own), hooks...)
		sort.SliceStable(hooks, func(i, j int) bool { return hooks[i].config < hooks[j].config })
		p = &Webhooks{mutating: mutating, hooks: hooks, namespaces: opts.Namespaces, authorizer: opts.Authorizer, metrics: f.metrics.Load()}
	}
	f.cur.Store(&p)
	c.mu.Lock()
	ready := c.discovered
	for _, k := range c.kinds {
		if k.plugin == f.plugin && !k.synced {
			ready = false
		}
	}
	c.mu.Unlock()
	if ready {
		f.readyOnce.Do(func() { close(f.ready) })
	}
}

// plugin is what a followed plugin runs: policies or webhooks.
type plugin interface {
	Named
	Reinvocable
	metricsUser
}

var (
	_ plugin = (*Webhooks)(nil)
	_ plugin = (*MutatingPolicies)(nil)
)

// Reinvocable is false: validating policies are never re-run.
func (v *ValidatingPolicies) Reinvocable() bool { return false }

// followed is one of kube's four plugins, over the configuration last
// compiled.
type followed struct {
	c         *Cluster
	plugin    string
	cur       atomic.Pointer[plugin]
	metrics   atomic.Pointer[metrics]
	ready     chan struct{}
	readyOnce sync.Once
}

// Name is kube's plugin name.
func (f *followed) Name() string { return f.plugin }

func (f *followed) useMetrics(m *metrics) {
	f.metrics.Store(m)
	if p := f.cur.Load(); p != nil {
		(*p).useMetrics(m)
	}
}

// Reinvocable is the current configuration's.
func (f *followed) Reinvocable() bool {
	p := f.cur.Load()
	return p != nil && (*p).Reinvocable()
}

// wait waits for the first sync, as kube's WaitForReady, and refuses the
// write when it does not come in time.
func (f *followed) wait(ctx context.Context, a *Attributes) error {
	select {
	case <-f.ready:
		return nil
	default:
	}
	t := time.NewTimer(f.c.cfg.ReadyWait)
	defer t.Stop()
	select {
	case <-f.ready:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	return forbidden(a, "not yet ready to handle request")
}

// Mutate runs the current mutating configuration.
func (f *followed) Mutate(ctx context.Context, a *Attributes) error {
	if err := f.wait(ctx, a); err != nil {
		return err
	}
	if m, ok := (*f.cur.Load()).(Mutator); ok {
		return m.Mutate(ctx, a)
	}
	return nil
}

// Validate runs the current validating configuration.
func (f *followed) Validate(ctx context.Context, a *Attributes) error {
	if err := f.wait(ctx, a); err != nil {
		return err
	}
	if v, ok := (*f.cur.Load()).(Validator); ok {
		return v.Validate(ctx, a)
	}
	return nil
}

// clusterParams follows the cluster's objects of the kinds policies name as
// paramKind, one informer per kind, started when a policy first names it.
type clusterParams struct {
	client *kubeclient.Client
	log    *zap.Logger
	retry  time.Duration

	mu    sync.Mutex // guards ctx and kinds
	ctx   context.Context
	kinds map[ParamKind]*paramState
}

type paramState struct {
	synced chan struct{}
	once   sync.Once
	// err is why the kind cannot be followed (discovery found no resource
	// for it); objects are by namespace/name.
	mu      sync.RWMutex // guards err and objects
	err     error
	objects map[string]map[string]any
}

// start lets the informers of the kinds wanted so far, and later, run until
// ctx is done.
func (p *clusterParams) start(ctx context.Context) {
	p.mu.Lock()
	p.ctx = ctx
	kinds := make([]ParamKind, 0, len(p.kinds))
	for k := range p.kinds {
		kinds = append(kinds, k)
	}
	p.mu.Unlock()
	for _, k := range kinds {
		go p.run(ctx, k)
	}
}

// want starts following the param kinds of cps not followed yet.
func (p *clusterParams) want(cps []*compiledPolicy) {
	for _, cp := range cps {
		if cp.Spec.ParamKind != nil {
			p.state(*cp.Spec.ParamKind)
		}
	}
}

func (p *clusterParams) state(k ParamKind) *paramState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.kinds[k]
	if st == nil {
		st = &paramState{synced: make(chan struct{})}
		p.kinds[k] = st
		if p.ctx != nil {
			go p.run(p.ctx, k)
		}
	}
	return st
}

// run finds the resource of k by discovery and follows it.
func (p *clusterParams) run(ctx context.Context, k ParamKind) {
	st := p.state(k)
	path := "/apis/" + k.APIVersion
	if !strings.Contains(k.APIVersion, "/") {
		path = "/api/" + k.APIVersion
	}
	var resource string
	for wait := time.Second; resource == ""; wait = min(2*wait, 30*time.Second) {
		var list resourceList
		err := p.client.Get(ctx, path, &list)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			for _, r := range list.Resources {
				if r.Kind == k.Kind && !strings.Contains(r.Name, "/") {
					resource = r.Name
				}
			}
			if resource == "" {
				err = fmt.Errorf("failed to find resource referenced by paramKind: '%s, Kind=%s'", k.APIVersion, k.Kind)
			}
		} else if errors.Is(err, kubeclient.ErrNotFound) {
			err = fmt.Errorf("failed to find resource referenced by paramKind: '%s, Kind=%s'", k.APIVersion, k.Kind)
		}
		if resource != "" {
			break
		}
		st.mu.Lock()
		st.err = err
		st.mu.Unlock()
		p.log.Warn("admission: cannot follow a paramKind", zap.String("apiVersion", k.APIVersion), zap.String("kind", k.Kind), zap.Error(err))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	decode := func(raw json.RawMessage) (string, map[string]any) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var m map[string]any
		_ = d.Decode(&m)
		if m == nil {
			return "", nil
		}
		// List items carry no type: the params' CEL sees it, as kube's.
		m["apiVersion"], m["kind"] = k.APIVersion, k.Kind
		md, _ := m["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		return ns + "/" + name, m
	}
	kubeclient.Inform(ctx, p.client, path+"/"+resource, p.retry, kubeclient.InformHandler{
		Replace: func(items []json.RawMessage) error {
			objs := make(map[string]map[string]any, len(items))
			for _, raw := range items {
				if key, m := decode(raw); m != nil {
					objs[key] = m
				}
			}
			st.mu.Lock()
			st.objects, st.err = objs, nil
			st.mu.Unlock()
			st.once.Do(func() { close(st.synced) })
			return nil
		},
		Event: func(typ string, raw json.RawMessage) error {
			key, m := decode(raw)
			if m == nil {
				return nil
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			objs := make(map[string]map[string]any, len(st.objects)+1) // readers hold the old map
			for k, v := range st.objects {
				objs[k] = v
			}
			if typ == meta.WatchDeleted {
				delete(objs, key)
			} else {
				objs[key] = m
			}
			st.objects = objs
			return nil
		},
		OnError: func(err error) {
			p.log.Warn("admission: cannot follow params; the last seen stay in use", zap.String("apiVersion", k.APIVersion),
				zap.String("kind", k.Kind), zap.Error(err))
		},
	})
}

// ListParams returns the cluster's objects of kind, waiting up to a second
// for their first list, as kube does.
func (p *clusterParams) ListParams(ctx context.Context, kind ParamKind) ([]map[string]any, error) {
	st := p.state(kind)
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-st.synced:
	case <-t.C:
	case <-ctx.Done():
	}
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.objects == nil {
		if st.err != nil {
			return nil, st.err
		}
		return nil, fmt.Errorf("paramKind kind `%s, Kind=%s` not yet synced to use for admission", kind.APIVersion, kind.Kind)
	}
	keys := make([]string, 0, len(st.objects))
	for k := range st.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]map[string]any, 0, len(keys))
	for _, k := range keys {
		out = append(out, st.objects[k])
	}
	return out, nil
}
