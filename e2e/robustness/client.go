// This file holds the HTTP client: each request as kubectl or client-go
// would send it (User-Agent, Accept: application/json), recorded in the
// history with its call and return times.

package robustness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// UserAgent is the User-Agent of every request.
const UserAgent = "annex-robustness/v0 (linux/amd64) e2e"

// apiPath is the resource's path prefix.
const apiPath = "/apis/platform.example.com/v1alpha1"

// Endpoint is one server as a client sees it.
type Endpoint struct {
	// Name names the server in the history, e.g. "bbolt#2" (incarnation 2).
	// It is read at each request, so a restart can change it.
	Name func() string
	// BaseURL is the server's URL, https://127.0.0.1:port.
	BaseURL string
	// HTTP is the client, with the admin certificate.
	HTTP *http.Client
}

// NewHTTPClient returns an HTTP/2 client with tlsCfg, as client-go's.
func NewHTTPClient(tlsCfg *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// Client is one client of the workload: it sends requests to endpoints and
// records them in a history.
type Client struct {
	ID      int
	H       *History
	Timeout time.Duration // per unary request; zero means 3 seconds
}

func (c *Client) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 3 * time.Second
	}
	return c.Timeout
}

// wireObject is what the history needs of an Environment.
type wireObject struct {
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Owner string `json:"owner"`
	} `json:"spec"`
}

func (w wireObject) object() (Object, error) {
	rv, err := strconv.ParseUint(w.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		return Object{}, fmt.Errorf("resourceVersion %q: %w", w.Metadata.ResourceVersion, err)
	}
	return Object{Key: w.Metadata.Namespace + "/" + w.Metadata.Name, RV: rv, Value: w.Spec.Owner}, nil
}

type wireStatus struct {
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

type wireList struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []wireObject `json:"items"`
}

func splitKey(key string) (ns, name string) {
	ns, name, _ = strings.Cut(key, "/")
	return ns, name
}

func objectURL(ep *Endpoint, key string) string {
	ns, name := splitKey(key)
	return ep.BaseURL + apiPath + "/namespaces/" + ns + "/environments/" + name
}

func collectionURL(ep *Endpoint, ns string) string {
	if ns == "" {
		return ep.BaseURL + apiPath + "/environments"
	}
	return ep.BaseURL + apiPath + "/namespaces/" + ns + "/environments"
}

// do sends one request and reads the whole response.
func (c *Client) do(ctx context.Context, ep *Endpoint, method, u, contentType string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := ep.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, b, nil
}

// classify sets op's outcome from a response to a single-object request.
func classify(op *Op, status int, body []byte, err error) {
	op.Status = status
	if err != nil {
		op.Outcome, op.Err = Unknown, err.Error()
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			op.Outcome = Refused
		}
		return
	}
	if status >= 200 && status < 300 {
		var w wireObject
		if err := json.Unmarshal(body, &w); err != nil {
			op.Outcome, op.Err = Rejected, "decode: "+err.Error()
			return
		}
		o, err := w.object()
		if err != nil {
			op.Outcome, op.Err = Rejected, err.Error()
			return
		}
		op.Outcome, op.Obj = OK, &o
		return
	}
	var st wireStatus
	_ = json.Unmarshal(body, &st)
	op.Err = fmt.Sprintf("%d %s: %s", status, st.Reason, st.Message)
	switch {
	case status == http.StatusNotFound:
		op.Outcome = NotFound
	case status == http.StatusConflict && st.Reason == "AlreadyExists":
		op.Outcome = AlreadyExists
	case status == http.StatusConflict:
		op.Outcome = Conflict
	case status == http.StatusGone:
		op.Outcome = Expired
	case status == http.StatusTooManyRequests || status >= 500:
		op.Outcome = Unknown
	default:
		op.Outcome = Rejected
	}
}

func envJSON(key, rv, value string) []byte {
	ns, name := splitKey(key)
	meta := map[string]any{"name": name, "namespace": ns}
	if rv != "" {
		meta["resourceVersion"] = rv
	}
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "platform.example.com/v1alpha1", "kind": "Environment",
		"metadata": meta, "spec": map[string]any{"owner": value, "tier": "dev"},
	})
	return b
}

func (c *Client) record(op Op) Op {
	op.Client = c.ID
	op.Return = c.H.Now()
	c.H.AddOp(op)
	return op
}

// Create POSTs a new object with value.
func (c *Client) Create(ctx context.Context, ep *Endpoint, key, value string) Op {
	ns, _ := splitKey(key)
	op := Op{Kind: OpCreate, Server: ep.Name(), Key: key, Value: value, Call: c.H.Now()}
	st, b, err := c.do(ctx, ep, http.MethodPost, collectionURL(ep, ns), "application/json", envJSON(key, "", value))
	classify(&op, st, b, err)
	return c.record(op)
}

// Get reads one object at resourceVersion rv ("" consistent, "0" any).
func (c *Client) Get(ctx context.Context, ep *Endpoint, key, rv string) Op {
	op := Op{Kind: OpGet, Server: ep.Name(), Key: key, RV: rv, Call: c.H.Now()}
	u := objectURL(ep, key)
	if rv != "" {
		u += "?resourceVersion=" + rv
	}
	st, b, err := c.do(ctx, ep, http.MethodGet, u, "", nil)
	classify(&op, st, b, err)
	return c.record(op)
}

// Update PUTs value with the precondition rv.
func (c *Client) Update(ctx context.Context, ep *Endpoint, key, value string, rv uint64) Op {
	op := Op{Kind: OpUpdate, Server: ep.Name(), Key: key, Value: value, Precondition: rv, Call: c.H.Now()}
	st, b, err := c.do(ctx, ep, http.MethodPut, objectURL(ep, key), "application/json", envJSON(key, strconv.FormatUint(rv, 10), value))
	classify(&op, st, b, err)
	return c.record(op)
}

// Patch sets value with a merge patch that carries no resourceVersion: an
// unconditional update, as kubectl patch sends.
func (c *Client) Patch(ctx context.Context, ep *Endpoint, key, value string) Op {
	op := Op{Kind: OpPatch, Server: ep.Name(), Key: key, Value: value, Call: c.H.Now()}
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"owner": value}})
	st, b, err := c.do(ctx, ep, http.MethodPatch, objectURL(ep, key), "application/merge-patch+json", body)
	classify(&op, st, b, err)
	return c.record(op)
}

// Delete DELETEs key, with preconditions.resourceVersion when rv is not 0.
func (c *Client) Delete(ctx context.Context, ep *Endpoint, key string, rv uint64) Op {
	op := Op{Kind: OpDelete, Server: ep.Name(), Key: key, Precondition: rv, Call: c.H.Now()}
	var body []byte
	ct := ""
	if rv != 0 {
		body, _ = json.Marshal(map[string]any{"apiVersion": "v1", "kind": "DeleteOptions",
			"preconditions": map[string]any{"resourceVersion": strconv.FormatUint(rv, 10)}})
		ct = "application/json"
	}
	st, b, err := c.do(ctx, ep, http.MethodDelete, objectURL(ep, key), ct, body)
	classify(&op, st, b, err)
	return c.record(op)
}

// ListOptions are a list's parameters.
type ListOptions struct {
	Namespace string
	RV, Match string
	Limit     int
	GapFill   bool
}

// List lists (every page, following continue) and records one operation.
func (c *Client) List(ctx context.Context, ep *Endpoint, o ListOptions) Op {
	op := Op{Kind: OpList, Server: ep.Name(), Namespace: o.Namespace, RV: o.RV, Match: o.Match, Limit: o.Limit, GapFill: o.GapFill, Call: c.H.Now()}
	cont := ""
	for {
		q := url.Values{}
		if cont == "" {
			if o.RV != "" {
				q.Set("resourceVersion", o.RV)
			}
			if o.Match != "" {
				q.Set("resourceVersionMatch", o.Match)
			}
		} else {
			q.Set("continue", cont)
		}
		if o.Limit > 0 {
			q.Set("limit", strconv.Itoa(o.Limit))
		}
		u := collectionURL(ep, o.Namespace)
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		st, b, err := c.do(ctx, ep, http.MethodGet, u, "", nil)
		if err != nil || st != http.StatusOK {
			classify(&op, st, b, err)
			if op.Outcome == OK { // a 2xx other than 200
				op.Outcome = Rejected
			}
			op.Obj = nil
			return c.record(op)
		}
		var l wireList
		if err := json.Unmarshal(b, &l); err != nil {
			op.Outcome, op.Err = Rejected, "decode list: "+err.Error()
			return c.record(op)
		}
		rv, err := strconv.ParseUint(l.Metadata.ResourceVersion, 10, 64)
		if err != nil {
			op.Outcome, op.Err = Rejected, "list resourceVersion: "+err.Error()
			return c.record(op)
		}
		if op.Pages == 0 {
			op.ListRV = rv
		}
		op.PageRV = append(op.PageRV, rv)
		op.Pages++
		for _, it := range l.Items {
			ob, err := it.object()
			if err != nil {
				op.Outcome, op.Err = Rejected, err.Error()
				return c.record(op)
			}
			op.Items = append(op.Items, ob)
		}
		if cont = l.Metadata.Continue; cont == "" {
			op.Outcome = OK
			return c.record(op)
		}
	}
}

// WatchOptions are a watch's parameters.
type WatchOptions struct {
	Namespace     string
	RV            string
	SendInitial   bool
	ExpectExpired bool
}

// Watch starts a watch and records every event it delivers into the
// history until ctx ends or the stream does. Each event is passed to seen
// (if not nil) as soon as it is recorded. It returns the record when the
// watch has ended.
func (c *Client) Watch(ctx context.Context, ep *Endpoint, o WatchOptions, seen func(WatchEvent)) *Watch {
	w := c.H.NewWatch(&Watch{Client: c.ID, Server: ep.Name(), Namespace: o.Namespace, RV: o.RV, SendInitial: o.SendInitial,
		ExpectExpired: o.ExpectExpired, Call: c.H.Now()})
	end := func(how string, err error) *Watch {
		w.End, w.Ended = c.H.Now(), how
		if err != nil {
			w.Err = err.Error()
		}
		return w
	}
	q := url.Values{"watch": {"true"}, "allowWatchBookmarks": {"true"}}
	if o.RV != "" {
		q.Set("resourceVersion", o.RV)
	}
	if o.SendInitial {
		q.Set("sendInitialEvents", "true")
		q.Set("resourceVersionMatch", "NotOlderThan")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, collectionURL(ep, o.Namespace)+"?"+q.Encode(), nil)
	if err != nil {
		return end("error", err)
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := ep.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return end("stopped", nil)
		}
		return end("cut", err)
	}
	defer resp.Body.Close()
	w.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode == http.StatusGone {
			return end("expired", fmt.Errorf("%s", b))
		}
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
			// The server is not ready (a watch cache loading after a
			// restart, as kube's "storage is (re)initializing") and asks
			// the client to retry: no event was promised.
			return end("throttled", fmt.Errorf("%d %s", resp.StatusCode, b))
		}
		return end("error", fmt.Errorf("%d %s", resp.StatusCode, b))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return end("error", fmt.Errorf("decode event: %v: %s", err, sc.Bytes()))
		}
		if ev.Type == "ERROR" {
			var st wireStatus
			_ = json.Unmarshal(ev.Object, &st)
			err := fmt.Errorf("ERROR %d %s: %s", st.Code, st.Reason, st.Message)
			if st.Code == http.StatusGone {
				return end("expired", err)
			}
			return end("error", err)
		}
		var wo wireObject
		if err := json.Unmarshal(ev.Object, &wo); err != nil {
			return end("error", fmt.Errorf("decode event object: %v", err))
		}
		ob, err := wo.object()
		if err != nil {
			return end("error", err)
		}
		we := WatchEvent{Type: ev.Type, Obj: ob, At: c.H.Now()}
		if ev.Type == "BOOKMARK" {
			we.Obj = Object{RV: ob.RV}
			we.InitialEnd = wo.Metadata.Annotations["k8s.io/initial-events-end"] == "true"
		}
		w.Events = append(w.Events, we)
		if seen != nil {
			seen(we)
		}
	}
	switch err := sc.Err(); {
	case ctx.Err() != nil:
		return end("stopped", nil)
	case err != nil && !errors.Is(err, io.EOF):
		return end("cut", err)
	default:
		return end("closed", nil)
	}
}
