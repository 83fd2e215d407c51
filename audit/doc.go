// Package audit is the audit stage of an annex server: who did what, when,
// through which path, whether it was allowed, and how long each stage took,
// written as kube-apiserver writes it (audit.k8s.io/v1 Events) to a log file
// and/or a webhook.
//
// # Policy
//
// An audit.k8s.io/v1 Policy (--audit-policy-file, ParsePolicy,
// LoadPolicyFile; unknown fields are refused) is compiled once into an
// Evaluator. Rules are tried in order and the first match decides the level
// (None, Metadata, Request, RequestResponse) and the stages left out
// (omitStages, the policy's unioned with the rule's), exactly as Kubernetes
// matches them: users and userGroups against the authenticated user (before
// impersonation), verbs, resources ("res", "res/sub", "*", "res/*" — which,
// as in Kubernetes, also matches res itself — and "*/sub") with
// resourceNames, namespaces ("" for cluster scope), nonResourceURLs ("*" or
// a trailing "*"). No match, or no policy, records nothing.
//
// # Events
//
// The filter (Auditor.Filter) writes RequestReceived on entry,
// ResponseStarted for long-running requests when the response starts,
// ResponseComplete at the end, or Panic (then re-panics for the panic
// recovery stage outside it). An event carries the audit ID (the Audit-Id
// header, filters.AuditIDFrom), the request URI, verb, user and
// impersonatedUser, sourceIPs (X-Forwarded-For, X-Real-Ip, peer), user
// agent, objectRef (from filters.RequestInfo, completed from the body of a
// create or update), responseStatus (the code; status, reason, message and
// details when the response is a Status), timestamps in microseconds, and
// annotations. At Request level it adds the request body as sent, at
// RequestResponse level the response body as returned: both are the bytes on
// the wire, copied while they pass, never decoded and re-encoded
// (omitManagedFields excepted, which rewrites them without
// metadata.managedFields). Responses of long-running requests are never
// recorded; a response larger than Config.MaxObjectBytes is left out and the
// event marked audit.k8s.io/truncated.
//
// # Annotations
//
// Later stages annotate the event through package filters, never by
// importing this one: filters.AddAuditAnnotation (admission policies and
// webhooks), filters.AddAuditAnnotationWithLevel (kept only at that level or
// above), filters.RecordAuthorizationDecision (authorization.k8s.io/decision
// and /reason) and filters.RecordImpersonatedUser. The first value of a key
// wins. Beyond Kubernetes, ResponseComplete events carry
// annex.dev/stage-latencies and annex.dev/rejected-by from Config.Stages.
//
// # Backends
//
// The log backend writes one JSON event per line to a file rotated by
// gopkg.in/natefinch/lumberjack.v2 (the library kube-apiserver uses, so
// --audit-log-maxage, -maxbackup and -maxsize mean the same), or to stdout.
// The webhook backend POSTs EventLists to the server of a kubeconfig with
// its TLS and credentials (package kubeclient), retrying with exponential
// backoff from --audit-webhook-initial-backoff. Each runs in one of three
// modes: batch (a buffer and a goroutine of its own; a full buffer drops the
// event, never blocks the request), blocking (written in the request's
// goroutine; failures are counted and the request proceeds) or
// blocking-strict (a failure to store RequestReceived rejects the request
// with a 500). Truncation (--audit-*-truncate-*) drops the objects of events
// over the size limit and splits batches.
//
// Loss is never silent: apiserver_audit_error_total{plugin} counts every
// event lost (plugin "buffered" for a full buffer, "log", "webhook",
// "truncate"), next to apiserver_audit_event_total,
// apiserver_audit_level_total{level} and
// apiserver_audit_requests_rejected_total.
//
// # Usage
//
//	f := audit.AddFlags(fs) // --audit-* as kube-apiserver
//	fs.Parse(os.Args[1:])
//	cfg, err := f.Config()  // loads --audit-policy-file
//	cfg.Registerer, cfg.Logger = reg, logger
//	a, err := audit.New(cfg) // nil when nothing is audited
//	handler = a.Filter(handler) // right after authentication
//	go a.Start(ctx)             // cancel ctx after the server drained
//
// # Caveats
//
// The filter must run after authentication and before impersonation, as in
// Kubernetes: the policy sees the authenticated user. Start flushes every
// buffered event when its context ends; events sent after that are counted
// as lost, so end it only once in-flight requests have drained. The log
// backend's legacy text format is not supported. Events are encoded once,
// in the request's goroutine, and shared by the backends.
package audit
