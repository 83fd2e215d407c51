// This file holds the Client: JSON requests with retries, and watches.

package kubeclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/annexapi/annex/meta"
)

// maxBody bounds how much of an answer is read (a ConfigMap of CA bundles is
// a few KiB; a Status is smaller).
const maxBody = 16 << 20

// tokenRefresh is how often BearerTokenFile is re-read.
const tokenRefresh = time.Minute

// Client talks JSON to one kube-apiserver. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	http      *http.Client
	timeout   time.Duration
	backoff   Backoff
	userAgent string

	token     string
	tokenFile string
	// tokenMu guards fileToken and tokenRead.
	tokenMu   sync.Mutex
	fileToken string
	tokenRead time.Time
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: host %q", ErrInvalidConfig, cfg.Host)
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("%w: host %q is not https", ErrInvalidConfig, cfg.Host)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.ServerName}
	if len(cfg.CAData) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CAData) {
			return nil, fmt.Errorf("%w: no certificate in CA data", ErrInvalidConfig)
		}
		tc.RootCAs = pool
	}
	if len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 {
		kp, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate: %v", ErrInvalidConfig, err)
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	tr := &http.Transport{
		TLSClientConfig:     tc,
		Proxy:               http.ProxyFromEnvironment,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	c := &Client{
		base: u,
		http: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // never follow: CVE-2022-3172
		}},
		timeout:   cfg.Timeout,
		backoff:   cfg.Backoff,
		userAgent: cfg.UserAgent,
		token:     cfg.BearerToken,
		tokenFile: cfg.BearerTokenFile,
	}
	if c.timeout == 0 {
		c.timeout = 10 * time.Second
	}
	if c.userAgent == "" {
		c.userAgent = "annex"
	}
	b := &c.backoff
	if b.Initial == 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Factor == 0 {
		b.Factor = 1.5
	}
	if b.Jitter == 0 {
		b.Jitter = 0.2
	}
	if b.Steps == 0 {
		b.Steps = 5
	}
	if b.Steps < 1 {
		b.Steps = 1
	}
	if c.tokenFile != "" && c.token == "" {
		if _, err := c.bearer(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Host returns the server's base URL.
func (c *Client) Host() string { return c.base.String() }

func (c *Client) bearer() (string, error) {
	if c.token != "" || c.tokenFile == "" {
		return c.token, nil
	}
	c.tokenMu.Lock()
	defer c.tokenMu.Unlock()
	if c.fileToken != "" && time.Since(c.tokenRead) < tokenRefresh {
		return c.fileToken, nil
	}
	b, err := os.ReadFile(c.tokenFile)
	if err != nil {
		if c.fileToken != "" {
			return c.fileToken, nil // keep the last good token
		}
		return "", fmt.Errorf("%w: token file: %v", ErrInvalidConfig, err)
	}
	c.fileToken, c.tokenRead = strings.TrimSpace(string(b)), time.Now()
	return c.fileToken, nil
}

// Get GETs path (with its query) and decodes the JSON answer into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.Do(ctx, http.MethodGet, path, nil, out)
}

// Post POSTs in as JSON to path and decodes the JSON answer into out.
func (c *Client) Post(ctx context.Context, path string, in, out any) error {
	return c.Do(ctx, http.MethodPost, path, in, out)
}

// Do sends one request, retrying connection errors, 429 and 5xx with
// backoff, and decodes a 2xx JSON answer into out (unless out is nil). A
// non-2xx answer is a *StatusError.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	return c.do(ctx, method, path, acceptJSON, in, out)
}

// acceptJSON is the Accept header of every request but an Inform's of
// metadata.
const acceptJSON = "application/json"

// do is Do with the Accept header accept.
func (c *Client) do(ctx context.Context, method, path, accept string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("kubeclient: encoding request: %w", err)
		}
	}
	wait := c.backoff.Initial
	for attempt := 1; ; attempt++ {
		retry, after, err := c.once(ctx, method, path, accept, body, out)
		if err == nil || !retry || attempt >= c.backoff.Steps || ctx.Err() != nil {
			return err
		}
		d := wait
		if c.backoff.Jitter > 0 {
			d += time.Duration(rand.Float64() * c.backoff.Jitter * float64(wait))
		}
		if after > d {
			d = after
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = time.Duration(float64(wait) * c.backoff.Factor)
	}
}

// once sends one attempt and says whether a failure may be retried and after
// how long the server asked to wait.
func (c *Client) once(ctx context.Context, method, path, accept string, body []byte, out any) (retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := c.newRequest(ctx, method, path, accept, body)
	if err != nil {
		return false, 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return true, 0, fmt.Errorf("kubeclient: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return true, 0, fmt.Errorf("kubeclient: %s %s: reading answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := statusError(method, path, resp.StatusCode, data)
		retryable := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return retryable, retryAfter(resp), se
	}
	if out == nil {
		return false, 0, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, 0, fmt.Errorf("kubeclient: %s %s: decoding answer: %w", method, path, err)
	}
	return false, 0, nil
}

func (c *Client) newRequest(ctx context.Context, method, path, accept string, body []byte) (*http.Request, error) {
	ref, err := url.Parse(path)
	if err != nil {
		return nil, fmt.Errorf("kubeclient: path %q: %w", path, err)
	}
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + ref.Path
	u.RawQuery = ref.RawQuery
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("kubeclient: %w", err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	tok, err := c.bearer()
	if err != nil {
		return nil, err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return req, nil
}

func statusError(method, path string, code int, body []byte) *StatusError {
	se := &StatusError{Method: method, Path: path, Code: code}
	var st meta.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		se.Status = &st
	}
	return se
}

func retryAfter(resp *http.Response) time.Duration {
	s, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, time.Minute)
}

// Watcher reads the events of one watch. It is not safe for concurrent use.
type Watcher struct {
	body io.ReadCloser
	dec  *json.Decoder
	stop context.CancelFunc
}

// Watch opens a watch on path (whose query should carry watch=true and a
// resourceVersion). It is not retried: callers re-list and re-watch, as an
// informer does. The watch lasts until ctx is done, the server ends it, or
// Close.
func (c *Client) Watch(ctx context.Context, path string) (*Watcher, error) {
	return c.watch(ctx, path, acceptJSON)
}

// watch is Watch with the Accept header accept.
func (c *Client) watch(ctx context.Context, path, accept string) (*Watcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := c.newRequest(ctx, http.MethodGet, path, accept, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kubeclient: watch %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		cancel()
		return nil, statusError(http.MethodGet, path, resp.StatusCode, data)
	}
	return &Watcher{body: resp.Body, dec: json.NewDecoder(resp.Body), stop: cancel}, nil
}

// Next returns the next event; io.EOF when the server ended the watch.
func (w *Watcher) Next() (meta.WatchEvent, error) {
	var ev meta.WatchEvent
	if err := w.dec.Decode(&ev); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		return ev, err
	}
	return ev, nil
}

// Close ends the watch.
func (w *Watcher) Close() error {
	w.stop()
	return w.body.Close()
}

// HTTPClient returns an http.Client that reaches this server as Client
// does (its TLS, its credentials, its user agent, no redirects) for
// requests made by hand, such as a webhook call through the cluster's
// service proxy (ServiceProxyURL). It does not retry and has no timeout of
// its own: the caller's context bounds each request.
func (c *Client) HTTPClient() *http.Client {
	return &http.Client{Transport: authTransport{c}, CheckRedirect: c.http.CheckRedirect}
}

// authTransport adds the client's credentials and user agent.
type authTransport struct{ c *Client }

func (t authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.c.bearer()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("User-Agent", t.c.userAgent)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.c.http.Transport.RoundTrip(req)
}

// ServiceProxyURL is the URL of path on port of a service, through this
// server's service proxy:
// <host>/api/v1/namespaces/<ns>/services/https:<name>:<port>/proxy<path>.
func (c *Client) ServiceProxyURL(namespace, name string, port int32, path string) *url.URL {
	u := *c.base
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + fmt.Sprintf("/api/v1/namespaces/%s/services/https:%s:%d/proxy%s", namespace, name, port, path)
	return &u
}
