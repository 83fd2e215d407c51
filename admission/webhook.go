// This file holds admission webhooks: Mutating- and
// ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1), called
// with AdmissionReview v1 over HTTPS, with Kubernetes' matching, ordering,
// failure policies, reinvocation, dry-run rules and messages. Redirects are
// never followed (CVE-2022-3172) and response bodies are never logged.

package admission

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"github.com/annexapi/annex/cellib"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/hookclient"
	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/meta"
)

// ServiceReference is a webhook's in-cluster service.
type ServiceReference struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Path      *string `json:"path,omitempty"`
	Port      *int32  `json:"port,omitempty"`
}

// WebhookClientConfig says how to reach a webhook.
type WebhookClientConfig struct {
	URL      *string           `json:"url,omitempty"`
	Service  *ServiceReference `json:"service,omitempty"`
	CABundle []byte            `json:"caBundle,omitempty"`
}

// Webhook is one entry of a webhook configuration.
type Webhook struct {
	Name                    string              `json:"name"`
	ClientConfig            WebhookClientConfig `json:"clientConfig"`
	Rules                   []Rule              `json:"rules,omitempty"`
	FailurePolicy           *string             `json:"failurePolicy,omitempty"`
	MatchPolicy             *string             `json:"matchPolicy,omitempty"`
	NamespaceSelector       *LabelSelector      `json:"namespaceSelector,omitempty"`
	ObjectSelector          *LabelSelector      `json:"objectSelector,omitempty"`
	SideEffects             *string             `json:"sideEffects,omitempty"`
	TimeoutSeconds          *int32              `json:"timeoutSeconds,omitempty"`
	AdmissionReviewVersions []string            `json:"admissionReviewVersions,omitempty"`
	ReinvocationPolicy      *string             `json:"reinvocationPolicy,omitempty"`
	MatchConditions         []NamedExpression   `json:"matchConditions,omitempty"`
}

// WebhookConfiguration is a MutatingWebhookConfiguration or
// ValidatingWebhookConfiguration.
type WebhookConfiguration struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Webhooks   []Webhook  `json:"webhooks"`
}

// LoadWebhookConfigurations reads a multi-document YAML (or JSON) stream of
// webhook configurations; unknown fields are errors.
func LoadWebhookConfigurations(data []byte) ([]WebhookConfiguration, error) {
	docs, err := yamlDocs(data)
	if err != nil {
		return nil, err
	}
	var out []WebhookConfiguration
	for i, b := range docs {
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		var c WebhookConfiguration
		if err := d.Decode(&c); err != nil {
			return nil, fmt.Errorf("%w: document %d: %v", ErrInvalidConfig, i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// WebhookOptions configures webhook calls. The zero value is Kubernetes'
// defaults with no namespace lookups.
type WebhookOptions struct {
	// Namespaces looks namespaces up for namespaceSelector; nil means
	// namespace selectors see no labels.
	Namespaces NamespaceGetter
	// ResolveService turns a service reference into a base URL; nil means
	// https://<name>.<namespace>.svc:<port>.
	ResolveService func(ref ServiceReference) (*url.URL, error)
	// Credentials, when not nil, returns how the server authenticates to
	// the webhook at target ("<service>.<namespace>.svc:<port>", or the
	// URL's host[:port]), as a WebhookAdmissionConfiguration's
	// kubeConfigFile says; nil means anonymously.
	Credentials func(target string) (*WebhookCredentials, error)
	// Authorizer answers matchConditions' authorizer checks for the
	// request's user, as PolicyOptions.Authorizer; nil means a condition
	// that reads the authorizer fails to evaluate.
	Authorizer cellib.Authorizer
	// ServiceProxy, when set, reaches the webhooks a service names through
	// this cluster's service proxy
	// (/api/v1/namespaces/<ns>/services/https:<name>:<port>/proxy<path>)
	// with the client's credentials, instead of ResolveService: the server
	// then needs no route to the service, and the kube-apiserver makes the
	// last hop (it does not check the webhook's certificate against
	// caBundle, nor present Credentials). Nil means ResolveService.
	ServiceProxy *kubeclient.Client
}

// WebhookCredentials authenticate the server to a webhook: a client
// certificate, a bearer token, or a username and password.
type WebhookCredentials struct {
	Certificate        *tls.Certificate
	BearerToken        string
	Username, Password string
}

// Webhooks calls the webhooks of a set of configurations. Mutating ones are
// a Mutator (called serially), validating ones a Validator (called in
// parallel). Safe for concurrent use.
type Webhooks struct {
	mutating   bool
	hooks      []*hook
	namespaces NamespaceGetter   // WebhookOptions.Namespaces, for namespaceSelector
	authorizer cellib.Authorizer // WebhookOptions.Authorizer, for matchConditions
	metrics    *metrics
}

var (
	_ Mutator     = (*Webhooks)(nil)
	_ Validator   = (*Webhooks)(nil)
	_ Reinvocable = (*Webhooks)(nil)
)

type hook struct {
	Webhook
	config string
	url    *url.URL
	client *http.Client
	// creds authenticate the server to the webhook (nil: anonymously).
	creds      *WebhookCredentials
	timeout    time.Duration
	failOpen   bool
	conditions []*compiled
	condNames  []string
	// readsAuthorizer is true when a matchCondition reads the authorizer.
	readsAuthorizer bool
	id              string
	// broken is why a webhook from the cluster could not be prepared
	// here: calling it fails with this error, under its failurePolicy.
	broken error
}

// NewMutatingWebhooks prepares the webhooks of MutatingWebhookConfigurations.
func NewMutatingWebhooks(configs []WebhookConfiguration, opts WebhookOptions) (*Webhooks, error) {
	return newWebhooks(configs, opts, true)
}

// NewValidatingWebhooks prepares the webhooks of ValidatingWebhookConfigurations.
func NewValidatingWebhooks(configs []WebhookConfiguration, opts WebhookOptions) (*Webhooks, error) {
	return newWebhooks(configs, opts, false)
}

func newWebhooks(configs []WebhookConfiguration, opts WebhookOptions, mutating bool) (*Webhooks, error) {
	hooks, err := prepareHooks(configs, opts, mutating, nil)
	if err != nil {
		return nil, err
	}
	return &Webhooks{mutating: mutating, namespaces: opts.Namespaces, authorizer: opts.Authorizer, hooks: hooks}, nil
}

// prepareHooks prepares the webhooks of configs, sorted by configuration
// name. With onBroken nil, a webhook that cannot be prepared is an error;
// otherwise (configuration from the cluster) it is kept broken, told to
// onBroken, and fails when called, under its failurePolicy.
func prepareHooks(configs []WebhookConfiguration, opts WebhookOptions, mutating bool, onBroken func(error)) ([]*hook, error) {
	kind := "ValidatingWebhookConfiguration"
	if mutating {
		kind = "MutatingWebhookConfiguration"
	}
	configs = append([]WebhookConfiguration(nil), configs...)
	sort.SliceStable(configs, func(i, j int) bool { return configs[i].Metadata.Name < configs[j].Metadata.Name })
	env, err := policyEnv(false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	var hooks []*hook
	for _, c := range configs {
		if c.Kind != "" && c.Kind != kind {
			continue
		}
		for i, wh := range c.Webhooks {
			h, err := prepareHook(env, kind, c.Metadata.Name, i, wh, opts)
			if err != nil {
				if onBroken == nil {
					return nil, err
				}
				onBroken(err)
				h = &hook{Webhook: wh, config: c.Metadata.Name, id: fmt.Sprintf("%s/%d", c.Metadata.Name, i), broken: err,
					failOpen: wh.FailurePolicy != nil && *wh.FailurePolicy == "Ignore"}
			}
			hooks = append(hooks, h)
		}
	}
	return hooks, nil
}

// prepareHook checks one webhook and makes its client and programs.
func prepareHook(env *cel.Env, kind, config string, i int, wh Webhook, opts WebhookOptions) (*hook, error) {
	h := &hook{Webhook: wh, config: config, id: fmt.Sprintf("%s/%d", config, i)}
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: %s %q webhooks[%d] (%s): %s", ErrInvalidConfig, kind, config, i, wh.Name, fmt.Sprintf(f, a...))
	}
	if wh.Name == "" {
		return nil, bad("name: Required value")
	}
	if err := wh.NamespaceSelector.validate("namespaceSelector"); err != nil {
		return nil, bad("%v", err)
	}
	if err := wh.ObjectSelector.validate("objectSelector"); err != nil {
		return nil, bad("%v", err)
	}
	svc := wh.ClientConfig.Service
	port := int32(443)
	if svc != nil && svc.Port != nil {
		port = *svc.Port
	}
	switch {
	case wh.ClientConfig.URL != nil:
		u, err := hookclient.ParseURL(*wh.ClientConfig.URL)
		if err != nil {
			return nil, bad("clientConfig.url: %v", err)
		}
		h.url = u
	case svc != nil && opts.ServiceProxy != nil:
		path := ""
		if svc.Path != nil {
			path = *svc.Path
		}
		h.url = opts.ServiceProxy.ServiceProxyURL(svc.Namespace, svc.Name, port, path)
		h.client = opts.ServiceProxy.HTTPClient()
	case svc != nil:
		u := hookclient.ServiceURL(svc.Name, svc.Namespace, port)
		if opts.ResolveService != nil {
			var err error
			if u, err = opts.ResolveService(*svc); err != nil {
				return nil, bad("clientConfig.service: %v", err)
			}
		}
		if svc.Path != nil {
			u.Path = *svc.Path
		}
		h.url = u
	default:
		return nil, bad("clientConfig: exactly one of url or service is required")
	}
	if h.client == nil { // not through the service proxy: TLS to the webhook itself
		serverName := ""
		if svc != nil {
			serverName = svc.Name + "." + svc.Namespace + ".svc"
		}
		tlsCfg, err := hookclient.TLSConfig(wh.ClientConfig.CABundle, serverName)
		if err != nil {
			return nil, bad("clientConfig.%v", err)
		}
		if opts.Credentials != nil {
			target := h.url.Host
			if svc != nil {
				target = fmt.Sprintf("%s.%s.svc:%d", svc.Name, svc.Namespace, port)
			}
			creds, err := opts.Credentials(target)
			if err != nil {
				return nil, bad("credentials for %s: %v", target, err)
			}
			if creds != nil {
				if creds.Certificate != nil {
					tlsCfg.Certificates = []tls.Certificate{*creds.Certificate}
				}
				h.creds = creds
			}
		}
		h.client = hookclient.Client(tlsCfg)
	}
	h.timeout = 10 * time.Second
	if wh.TimeoutSeconds != nil {
		if *wh.TimeoutSeconds < 1 || *wh.TimeoutSeconds > 30 {
			return nil, bad("timeoutSeconds: Invalid value: %d: the timeout value must be between 1 and 30 seconds", *wh.TimeoutSeconds)
		}
		h.timeout = time.Duration(*wh.TimeoutSeconds) * time.Second
	}
	h.failOpen = wh.FailurePolicy != nil && *wh.FailurePolicy == "Ignore"
	for j, mc := range wh.MatchConditions {
		prg, err := compileExpr(env, mc.Expression, nil, PerCallLimit)
		if err != nil {
			return nil, bad("matchConditions[%d].expression: %v", j, err)
		}
		h.conditions, h.condNames = append(h.conditions, prg), append(h.condNames, mc.Name)
		h.readsAuthorizer = h.readsAuthorizer || prg.references(authorizerVar) || prg.references(requestResourceVar)
	}
	return h, nil
}

func (w *Webhooks) useMetrics(m *metrics) { w.metrics = m }

// Name labels metrics.
func (w *Webhooks) Name() string {
	if w.mutating {
		return "MutatingAdmissionWebhook"
	}
	return "ValidatingAdmissionWebhook"
}

// Reinvocable is true when a mutating webhook has reinvocationPolicy IfNeeded.
func (w *Webhooks) Reinvocable() bool {
	for _, h := range w.hooks {
		if w.mutating && h.ReinvocationPolicy != nil && *h.ReinvocationPolicy == "IfNeeded" {
			return true
		}
	}
	return false
}

// shouldCall applies namespaceSelector, objectSelector, rules and
// matchConditions, in that order (a selector error counts only if the
// rules match).
// It returns the attributes to send: a, or a converted to the version of
// the rule that matched (matchPolicy Equivalent).
func (w *Webhooks) shouldCall(ctx context.Context, h *hook, a *Attributes, ns NamespaceGetter) (*Attributes, bool, error) {
	at, ok, err := w.shouldCallAt(ctx, h, a, ns)
	if err != nil || !ok {
		return a, ok, err
	}
	return at, true, nil
}

func (w *Webhooks) shouldCallAt(ctx context.Context, h *hook, a *Attributes, ns NamespaceGetter) (*Attributes, bool, error) {
	selOK, selErr := matchSelectors(ctx, h.NamespaceSelector, h.ObjectSelector, a, ns)
	version, ruleOK := matchedVersion(a, h.MatchPolicy, func(a *Attributes) bool {
		for i := range h.Rules {
			if h.Rules[i].Matches(a) {
				return true
			}
		}
		return false
	})
	if !ruleOK {
		return a, false, nil
	}
	if h.broken != nil { // called, to fail under its failurePolicy
		return a, true, nil
	}
	if selErr != nil {
		return a, false, meta.NewInternalError(selErr)
	}
	if !selOK {
		return a, false, nil
	}
	a, err := a.AtVersion(ctx, version)
	if err != nil {
		return a, false, meta.NewInternalError(err)
	}
	if selErr != nil {
		return a, false, meta.NewInternalError(selErr)
	}
	if !selOK {
		return a, false, nil
	}
	if len(h.conditions) == 0 {
		return a, true, nil
	}
	budget := int64(MatchConditionBudget)
	act := map[string]any{"object": nilOr(a.Object), "oldObject": nilOr(a.OldObject), "request": requestObject(a, ""),
		"params": nil, "namespaceObject": nil, "variables": map[string]any{}}
	if h.readsAuthorizer {
		bindAuthorizer(ctx, act, w.authorizer, a)
	}
	var firstErr error
	for i, prg := range h.conditions {
		v, err := prg.eval(ctx, act, &budget)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("failed to evaluate match condition %q: %v", h.condNames[i], err)
			}
			continue
		}
		if v == types.False {
			return a, false, nil
		}
	}
	if firstErr != nil {
		if h.failOpen {
			return a, false, nil
		}
		return a, false, forbidden(a, firstErr.Error())
	}
	return a, true, nil
}

// nilOr is m, or no value at all when m is nil (CEL's null).
func nilOr(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

type reinvokeState struct {
	invoked map[string]bool
	last    map[string]map[string]any
}

// Mutate calls the matching mutating webhooks one after the other, applying
// each JSONPatch before the next is called.
func (w *Webhooks) Mutate(ctx context.Context, a *Attributes) error {
	if !w.mutating {
		return nil
	}
	st := a.PluginState(w, func() any {
		return &reinvokeState{invoked: map[string]bool{}, last: map[string]map[string]any{}}
	}).(*reinvokeState)
	round := 0
	if a.IsReinvoke() {
		round = 1
	}
	anyIfNeededInvoked := false
	for i, h := range w.hooks {
		ifNeeded := h.ReinvocationPolicy != nil && *h.ReinvocationPolicy == "IfNeeded"
		if a.IsReinvoke() {
			if !ifNeeded || !st.invoked[h.id] || reflect.DeepEqual(st.last[h.id], a.Object) {
				continue
			}
		}
		at, ok, err := w.shouldCall(ctx, h, a, w.namespaces)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		changed, err := w.callMutating(ctx, h, at, round, i)
		if err != nil {
			return err
		}
		if err := a.TakeMutation(ctx, at); err != nil {
			return meta.NewInternalError(err)
		}
		if ifNeeded {
			st.invoked[h.id] = true
			st.last[h.id] = deepCopyMap(a.Object)
		}
		if changed && anyIfNeededInvoked {
			a.RequestReinvocation()
		}
		if ifNeeded {
			anyIfNeededInvoked = true
		}
	}
	return nil
}

// Validate calls the matching validating webhooks in parallel; all finish
// and the first error received wins.
func (w *Webhooks) Validate(ctx context.Context, a *Attributes) error {
	if w.mutating {
		return nil
	}
	var relevant []*hook
	var at []*Attributes // each relevant hook's attributes
	for _, h := range w.hooks {
		ha, ok, err := w.shouldCall(ctx, h, a, w.namespaces)
		if err != nil {
			return err
		}
		if ok {
			relevant = append(relevant, h)
			at = append(at, ha)
		}
	}
	if len(relevant) == 0 {
		return nil
	}
	errs := make(chan error, len(relevant))
	var wg sync.WaitGroup
	for i, h := range relevant {
		a := at[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					if !h.failOpen {
						errs <- meta.NewInternalError(fmt.Errorf("panic calling webhook %q: %v", h.Name, r))
					}
				}
			}()
			resp, err := w.call(ctx, h, a)
			if err != nil {
				if e := w.callError(ctx, h, a, err, -1, -1); e != nil {
					errs <- e
				}
				return
			}
			if err := w.result(ctx, h, a, resp); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

// callError applies the failure policy to a call error.
func (w *Webhooks) callError(ctx context.Context, h *hook, a *Attributes, err error, round, index int) error {
	var st *meta.Status
	if errors.As(err, &st) {
		return st // e.g. dry run unsupported: failurePolicy does not apply
	}
	typ := "validating"
	if w.mutating {
		typ = "admit"
	}
	if h.failOpen {
		w.metrics.failOpen(h.Name, typ)
		if w.mutating && round >= 0 {
			filters.AddAuditAnnotation(ctx, fmt.Sprintf("failed-open.mutation.webhook.admission.k8s.io/round_%d_index_%d", round, index), h.Name)
		} else {
			filters.AddAuditAnnotation(ctx, fmt.Sprintf("failed-open.validating.webhook.admission.k8s.io/index_%d", index), h.Name)
		}
		return nil
	}
	if ctx.Err() != nil {
		return meta.NewTimeout(fmt.Sprintf("request did not complete within requested timeout - %v", ctx.Err()), 0)
	}
	w.metrics.webhookRejected(h.Name, typ, a.Operation, "calling_webhook_error", 500)
	return meta.NewInternalError(fmt.Errorf("failed calling webhook %q: %v", h.Name, err))
}

func (w *Webhooks) callMutating(ctx context.Context, h *hook, a *Attributes, round, index int) (bool, error) {
	resp, err := w.call(ctx, h, a)
	if err != nil {
		return false, w.callError(ctx, h, a, err, round, index)
	}
	if err := w.result(ctx, h, a, resp); err != nil {
		return false, err
	}
	annot := func(k string, v map[string]any) {
		b, _ := json.Marshal(v)
		key := fmt.Sprintf("%s.webhook.admission.k8s.io/round_%d_index_%d", k, round, index)
		if k == "patch" { // the patch is recorded at Request level and above, as Kubernetes
			filters.AddAuditAnnotationWithLevel(ctx, key, string(b), "Request")
			return
		}
		filters.AddAuditAnnotation(ctx, key, string(b))
	}
	if len(resp.Patch) == 0 {
		annot("mutation", map[string]any{"configuration": h.config, "webhook": h.Name, "mutated": false})
		return false, nil
	}
	if a.Object == nil {
		return false, meta.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.Name))
	}
	var ops []any
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		return false, meta.NewInternalError(fmt.Errorf("failed calling webhook %q: invalid patch: %v", h.Name, err))
	}
	next, err := applyJSONPatch(a.Object, ops)
	if err != nil {
		return false, meta.NewInternalError(err)
	}
	changed := !reflect.DeepEqual(celValue(next), celValue(a.Object))
	a.Object = next
	annot("patch", map[string]any{"configuration": h.config, "webhook": h.Name, "patch": ops, "patchType": "JSONPatch"})
	annot("mutation", map[string]any{"configuration": h.config, "webhook": h.Name, "mutated": changed})
	return changed, nil
}

// admissionResponse is AdmissionReview v1 response.
type admissionResponse struct {
	UID              string            `json:"uid"`
	Allowed          bool              `json:"allowed"`
	Result           *meta.Status      `json:"status,omitempty"`
	Patch            []byte            `json:"patch,omitempty"`
	PatchType        *string           `json:"patchType,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	Warnings         []string          `json:"warnings,omitempty"`
}

// call sends the AdmissionReview and validates the response's shape.
func (w *Webhooks) call(ctx context.Context, h *hook, a *Attributes) (*admissionResponse, error) {
	if h.broken != nil {
		return nil, h.broken
	}
	if a.DryRun && (h.SideEffects == nil || (*h.SideEffects != "None" && *h.SideEffects != "NoneOnDryRun")) {
		if h.SideEffects == nil {
			return nil, fmt.Errorf("Webhook SideEffects is nil")
		}
		return nil, meta.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.Name))
	}
	uid := newUID()
	req := requestObject(a, uid)
	// Both are always there, null when the operation has none, as kube
	// sends them.
	req["object"], req["oldObject"] = nilOr(a.Object), nilOr(a.OldObject)
	body, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	u := *h.url
	q := u.Query()
	if dl, ok := cctx.Deadline(); ok {
		q.Set("timeout", strconv.Itoa(int(math.Ceil(time.Until(dl).Seconds())))+"s")
	}
	u.RawQuery = q.Encode()
	hr, err := http.NewRequestWithContext(cctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if c := h.creds; c != nil {
		switch {
		case c.BearerToken != "":
			hr.Header.Set("Authorization", "Bearer "+c.BearerToken)
		case c.Username != "":
			hr.SetBasicAuth(c.Username, c.Password)
		}
	}
	start := time.Now()
	defer func() { filters.AddSLIExcluded(ctx, time.Since(start)) }()
	resp, err := h.client.Do(hr)
	typ := "validating"
	if w.mutating {
		typ = "admit"
	}
	if err != nil {
		w.metrics.observeWebhook(h.Name, typ, a.Operation, 0, false, time.Since(start))
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 3<<20))
	w.metrics.observeWebhook(h.Name, typ, a.Operation, resp.StatusCode, false, time.Since(start))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the server responded with status %d", resp.StatusCode)
	}
	var review struct {
		APIVersion string             `json:"apiVersion"`
		Kind       string             `json:"kind"`
		Response   *admissionResponse `json:"response"`
	}
	if err := json.Unmarshal(data, &review); err != nil {
		return nil, fmt.Errorf("received invalid webhook response: %v", err)
	}
	switch {
	case review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview":
		return nil, fmt.Errorf("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s", review.APIVersion, review.Kind)
	case review.Response == nil:
		return nil, errors.New("webhook response was absent")
	case review.Response.UID != uid:
		return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, review.Response.UID)
	}
	r := review.Response
	if w.mutating {
		hasPatch, hasType := len(r.Patch) > 0, r.PatchType != nil
		switch {
		case hasPatch != hasType:
			return nil, fmt.Errorf("webhook returned response.patch and response.patchType must both be set or both be unset")
		case hasType && *r.PatchType != "JSONPatch":
			return nil, fmt.Errorf("webhook returned invalid response.patchType of %q", *r.PatchType)
		}
	} else if len(r.Patch) > 0 || r.PatchType != nil {
		return nil, errors.New("validating webhooks may not return response.patch or response.patchType")
	}
	return r, nil
}

// result records warnings and audit annotations and turns a denial into
// Kubernetes' Status.
func (w *Webhooks) result(ctx context.Context, h *hook, a *Attributes, r *admissionResponse) error {
	for _, s := range r.Warnings {
		filters.AddWarning(ctx, s)
	}
	for k, v := range r.AuditAnnotations {
		filters.AddAuditAnnotation(ctx, h.Name+"/"+k, v)
	}
	if r.Allowed {
		return nil
	}
	st := &meta.Status{}
	if r.Result != nil {
		*st = *r.Result
	}
	denied := fmt.Sprintf("admission webhook %q denied the request", h.Name)
	switch {
	case st.Message != "":
		st.Message = denied + ": " + st.Message
	case st.Reason != "":
		st.Message = denied + ": " + string(st.Reason)
	default:
		st.Message = denied + " without explanation"
	}
	if st.Code < 400 {
		st.Code = http.StatusBadRequest
	}
	st.Kind, st.APIVersion, st.Status = "Status", "v1", meta.StatusFailure
	typ := "validating"
	if w.mutating {
		typ = "admit"
	}
	w.metrics.webhookRejected(h.Name, typ, a.Operation, "no_error", int(st.Code))
	return st
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
