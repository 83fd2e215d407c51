// This file holds the webhook backend: EventList batches POSTed over HTTPS
// to the server of a kubeconfig, with its TLS and credentials, retried with
// exponential backoff as kube-apiserver's audit webhook.

package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/annexapi/annex/kubeclient"
)

// WebhookConfig configures the webhook backend. The zero value (no
// ConfigFile, no Client) means no webhook backend.
type WebhookConfig struct {
	// ConfigFile is a kubeconfig whose current context's server is the URL
	// events are POSTed to, with its CA, client certificate or token
	// (--audit-webhook-config-file). The server must be https.
	ConfigFile string
	// Client, when set, is used instead of ConfigFile (its Backoff is then
	// the caller's).
	Client *kubeclient.Client
	// InitialBackoff is the wait before the first retry of a failed batch
	// (--audit-webhook-initial-backoff); later waits grow 1.5 times, with 20%
	// jitter, for 5 attempts in all. Zero means 10s.
	InitialBackoff time.Duration
	// Batch is the mode (--audit-webhook-mode, --audit-webhook-batch-*). Zero
	// means batch mode with kube-apiserver's defaults.
	Batch BatchConfig
	// Truncate is --audit-webhook-truncate-*.
	Truncate TruncateConfig
}

func (c *WebhookConfig) enabled() bool { return c.ConfigFile != "" || c.Client != nil }

// webhookTimeout bounds one POST, as Kubernetes' generic webhook.
const webhookTimeout = 30 * time.Second

func newWebhookSink(c *WebhookConfig, maxBatchBytes int64) (*webhookSink, error) {
	client, err := c.client()
	if err != nil {
		return nil, err
	}
	return &webhookSink{client: client, maxBatchBytes: maxBatchBytes}, nil
}

// client returns c.Client, or the client of c.ConfigFile (read, nothing
// else: it has no side effect).
func (c *WebhookConfig) client() (*kubeclient.Client, error) {
	if c.Client != nil {
		return c.Client, nil
	}
	kc, err := kubeclient.LoadKubeconfig(c.ConfigFile, "")
	if err != nil {
		return nil, fmt.Errorf("%w: audit webhook: %v", ErrInvalidConfig, err)
	}
	backoff := c.InitialBackoff
	if backoff == 0 {
		backoff = 10 * time.Second
	}
	if backoff < 0 {
		return nil, fmt.Errorf("%w: audit webhook initial backoff %v is negative", ErrInvalidConfig, backoff)
	}
	kc.Backoff = kubeclient.Backoff{Initial: backoff, Factor: 1.5, Jitter: 0.2, Steps: 5}
	kc.Timeout = webhookTimeout
	kc.UserAgent = "annex-audit"
	client, err := kubeclient.New(*kc)
	if err != nil {
		return nil, fmt.Errorf("%w: audit webhook: %v", ErrInvalidConfig, err)
	}
	return client, nil
}

// webhookSink POSTs events as EventLists, split so that none is larger than
// maxBatchBytes (0: no limit).
type webhookSink struct {
	client        *kubeclient.Client
	maxBatchBytes int64
}

func (s *webhookSink) write(ctx context.Context, events [][]byte) (int, error) {
	lost := 0
	var errs []error
	for len(events) > 0 {
		n, size := 0, int64(len(eventListPrefix)+2)
		for n < len(events) {
			next := size + int64(len(events[n]))
			if n > 0 && s.maxBatchBytes > 0 && next > s.maxBatchBytes {
				break
			}
			size, n = next, n+1
		}
		chunk := events[:n]
		events = events[n:]
		body := make([]byte, 0, size)
		body = appendEventListLines(body, chunk)
		if err := s.client.Post(ctx, "", json.RawMessage(body), nil); err != nil {
			lost += len(chunk)
			errs = append(errs, err)
		}
	}
	return lost, errors.Join(errs...)
}

// appendEventListLines is appendEventList on events that end in '\n'.
func appendEventListLines(dst []byte, events [][]byte) []byte {
	dst = append(dst, eventListPrefix...)
	for i, e := range events {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e[:len(e)-1]...)
	}
	return append(dst, ']', '}')
}

func (s *webhookSink) close() error { return nil }
