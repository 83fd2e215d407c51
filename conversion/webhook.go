package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/annexapi/annex/internal/hookclient"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// WebhookConfig says where the webhook is, as a CRD's
// spec.conversion.webhook. Zero values are defaults.
type WebhookConfig struct {
	// Name names the resource in errors, e.g. the CRD's name.
	Name string
	// URL is the webhook's https URL; or Service names it.
	URL     string
	Service *ServiceReference
	// CABundle is the PEM bundle that signs the webhook's serving
	// certificate; empty means the system's roots.
	CABundle []byte
	// ConversionReviewVersions are the review versions the webhook
	// accepts, preferred first; the first this server speaks (v1) is used.
	// Empty means v1.
	ConversionReviewVersions []string
	// Timeout bounds each call. Zero means 30 seconds; the request's own
	// deadline applies too.
	Timeout time.Duration
	// ResolveService turns Service into a base URL; nil means
	// https://<name>.<namespace>.svc:<port>, as kube-apiserver's default
	// resolver.
	ResolveService func(ServiceReference) (*url.URL, error)
}

// ServiceReference is a webhook served by a Service, as the CRD's
// clientConfig.service.
type ServiceReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Path      string `json:"path,omitempty"`
	// Port zero means 443.
	Port int32 `json:"port,omitempty"`
}

// Webhook converts through a conversion webhook. Safe for concurrent use.
type Webhook struct {
	url     string
	client  *http.Client
	timeout time.Duration
}

// NewWebhook checks cfg and returns its Webhook.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("conversion webhook %s: %s", cfg.Name, fmt.Sprintf(format, args...))
	}
	if len(cfg.ConversionReviewVersions) > 0 && !slices.Contains(cfg.ConversionReviewVersions, "v1") {
		return nil, bad("conversionReviewVersions %v: this server speaks only v1", cfg.ConversionReviewVersions)
	}
	var u *url.URL
	serverName := ""
	switch {
	case cfg.URL != "" && cfg.Service != nil:
		return nil, bad("exactly one of url or service is required, not both")
	case cfg.URL != "":
		var err error
		if u, err = hookclient.ParseURL(cfg.URL); err != nil {
			return nil, bad("url: %v", err)
		}
	case cfg.Service != nil:
		s := *cfg.Service
		if s.Port == 0 {
			s.Port = 443
		}
		if cfg.ResolveService != nil {
			var err error
			if u, err = cfg.ResolveService(s); err != nil {
				return nil, bad("service: %v", err)
			}
		} else {
			u = hookclient.ServiceURL(s.Name, s.Namespace, s.Port)
		}
		u.Path = s.Path
		serverName = s.Name + "." + s.Namespace + ".svc"
	default:
		return nil, bad("exactly one of url or service is required")
	}
	// A caBundle of whitespace is none, as kube-apiserver reads it.
	tlsCfg, err := hookclient.TLSConfig(bytes.TrimSpace(cfg.CABundle), serverName)
	if err != nil {
		return nil, bad("%v", err)
	}
	w := &Webhook{url: u.String(), timeout: cfg.Timeout, client: hookclient.Client(tlsCfg)}
	if w.timeout <= 0 {
		w.timeout = 30 * time.Second
	}
	return w, nil
}

// review is an apiextensions.k8s.io/v1 ConversionReview.
type review struct {
	Kind       string    `json:"kind"`
	APIVersion string    `json:"apiVersion"`
	Request    *request  `json:"request,omitempty"`
	Response   *response `json:"response,omitempty"`
}

type request struct {
	UID               string           `json:"uid"`
	DesiredAPIVersion string           `json:"desiredAPIVersion"`
	Objects           []map[string]any `json:"objects"`
}

type response struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           meta.Status       `json:"result"`
}

const reviewAPIVersion = "apiextensions.k8s.io/v1"

// Convert implements rest.Converter: one ConversionReview for objs.
func (w *Webhook) Convert(ctx context.Context, objs []map[string]any, desiredAPIVersion string) error {
	if len(objs) == 0 {
		return nil
	}
	av, _ := objs[0]["apiVersion"].(string)
	kind, _ := objs[0]["kind"].(string)
	gvk := av + ", Kind=" + kind
	failed := func(format string, args ...any) error {
		return meta.NewInternalError(fmt.Errorf("conversion webhook for %s failed: %s", gvk, fmt.Sprintf(format, args...)))
	}
	uid := storage.NewUID()
	body, err := json.Marshal(review{Kind: "ConversionReview", APIVersion: reviewAPIVersion,
		Request: &request{UID: uid, DesiredAPIVersion: desiredAPIVersion, Objects: objs}})
	if err != nil {
		return failed("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return failed("%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return failed("%v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return failed("%v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return failed("the server responded with %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var rv review
	if err := json.Unmarshal(b, &rv); err != nil {
		return failed("%v", err)
	}
	switch {
	case rv.APIVersion != reviewAPIVersion || rv.Kind != "ConversionReview":
		return failed("expected webhook response of %s, Kind=ConversionReview, got %s, Kind=%s", reviewAPIVersion, rv.APIVersion, rv.Kind)
	case rv.Response == nil:
		return failed("no response provided")
	case rv.Response.UID != uid:
		return failed("expected response.uid=%q, got %q", uid, rv.Response.UID)
	case rv.Response.Result.Status != meta.StatusSuccess:
		if rv.Response.Result.Message != "" {
			return failed("%s", rv.Response.Result.Message)
		}
		return failed("response.result.status was '%s', not 'Success'", rv.Response.Result.Status)
	case len(rv.Response.ConvertedObjects) != len(objs):
		return meta.NewInternalError(fmt.Errorf("conversion webhook for %s returned %d objects, expected %d", gvk, len(rv.Response.ConvertedObjects), len(objs)))
	}
	for i, raw := range rv.Response.ConvertedObjects {
		invalid := func(format string, args ...any) error {
			return meta.NewInternalError(fmt.Errorf("conversion webhook for %s returned invalid converted object at index %d: %s", gvk, i, fmt.Sprintf(format, args...)))
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || obj == nil {
			return invalid("not a JSON object")
		}
		if got, _ := obj["apiVersion"].(string); got != desiredAPIVersion {
			return invalid("invalid groupVersion (expected %s, received %s)", desiredAPIVersion, got)
		}
		if got, _ := obj["kind"].(string); got != kind {
			return invalid("invalid kind (expected %s, received %s)", kind, got)
		}
		inMD, _ := objs[i]["metadata"].(map[string]any)
		outMD, _ := obj["metadata"].(map[string]any)
		for _, f := range []string{"name", "namespace", "uid"} {
			if e, a := inMD[f], outMD[f]; e != a {
				return invalid("must have the same %s: %v != %v", f, e, a)
			}
		}
		objs[i] = obj
	}
	return nil
}
