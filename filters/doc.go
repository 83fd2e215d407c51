// Package filters is the request-scoped plumbing of an annex server: the
// values stages hand to each other through the request context, the
// request-info resolver, and the generic HTTP filters that run before
// authentication.
//
// It imports only meta, zap (request logging), two internal helpers (UUIDs,
// stack growth) and the standard library, so every other stage (authn,
// authz, admission, flowcontrol, audit, rest) can depend on it without
// depending on each other.
//
// # The context contract
//
// A stage reads what an earlier one provided through typed accessors, never
// by importing it:
//
//   - RequestInfoFrom: what the request asks for (WithRequestInfoResolver).
//   - UserFrom: the authenticated user (the authentication stage).
//   - AuditIDFrom: the audit ID, echoed in the Audit-Id header (WithAuditID).
//   - ReceivedTimestampFrom: when the request arrived
//     (WithRequestReceivedTimestamp).
//   - AddWarning: a warning for the client, sent as a Warning header
//     (WithWarningRecorder).
//   - TraceFrom: the stages the request went through, with their times
//     (the chain builder).
//
// Each has a ContextWith... setter (With... always returns a filter), so
// tests and users who
// build their own chain can provide the value themselves.
//
// # Filters
//
// A filter is a func(http.Handler) http.Handler returned by a constructor
// that takes a config struct whose zero value is Kubernetes' default; the
// constructor does the expensive work (compiling regexps, defaults) once.
// In the order Kubernetes runs them, outermost first:
//
//	WithStackGrowth                 the goroutine's stack grown once up front
//	ShutdownDrain.Filter            requests counted for shutdown; 429 + Retry-After while draining
//	WithAuditID                     Audit-Id: echo the request's, or a new UUID
//	WithPanicRecovery               500 text/plain on a panic; ErrAbortHandler aborts
//	WithRequestReceivedTimestamp    ctx ← received time
//	WithRequestInfoResolver         ctx ← RequestInfo; 404 on an unresolvable path
//	WithHSTS                        Strict-Transport-Security (off by default)
//	WithCacheControl                Cache-Control: no-cache, private
//	WithRequestDeadline             ctx deadline; 400 on a bad ?timeout=
//	WithRequestTimeout              504 Timeout Status when the deadline passes
//	WithWarningRecorder             Warning: 299 - "text" headers
//	WithCORS                        CORS headers, 204 preflight (off by default)
//	WithMaxRequestBody              413 over 3 MiB
//	WithRequestLogging              kube's httplog line at V(3), 5xx at Warn
//
// WithWarningRecorder must sit inside WithRequestTimeout: the recorder writes
// into the handler's header map, which the timeout filter keeps private to
// the handler until it writes, so a timeout never races a late warning.
// WithRequestDeadline should sit inside WithRequestReceivedTimestamp so the
// deadline counts from arrival. Filters that need the RequestInfo resolve it
// themselves with the default resolver when WithRequestInfoResolver is not
// in front of them.
//
// Long-running requests (LongRunningFunc; by default watches and
// /debug/pprof/) get no deadline and no timeout.
//
// # Response writers
//
// ResponseWriter records the status and bytes a handler wrote, for metrics,
// logs and audit; WrapResponseWriter reuses an existing one. Every wrapper in
// this package implements Unwrap and FlushError, so
// http.NewResponseController(w).Flush() reaches the connection through all of
// them, which watch streaming depends on.
//
// # Example
//
//	chain := func(h http.Handler) http.Handler {
//		for _, f := range []func(http.Handler) http.Handler{
//			filters.WithMaxRequestBody(filters.MaxRequestBodyConfig{}),
//			filters.WithWarningRecorder(filters.WarningRecorderConfig{}),
//			filters.WithRequestTimeout(filters.RequestTimeoutConfig{}),
//			filters.WithRequestDeadline(filters.RequestDeadlineConfig{}),
//			filters.WithCacheControl(filters.CacheControlConfig{}),
//			filters.WithRequestInfoResolver(filters.RequestInfoResolver{}),
//			filters.WithRequestReceivedTimestamp(filters.RequestReceivedTimestampConfig{}),
//			filters.WithPanicRecovery(filters.PanicRecoveryConfig{OnPanic: logPanic}),
//			filters.WithAuditID(filters.AuditIDConfig{}),
//		} {
//			h = f(h) // innermost first, so WithAuditID ends up outermost
//		}
//		return h
//	}
//
// # Caveats
//
// WithPanicRecovery reports panics to a callback rather than a logger, so
// this package does not import a logging library; the root package adapts
// its *zap.Logger. The timeout filter runs the handler on the request's
// goroutine and acts at the deadline from a context.AfterFunc (a goroutine
// only for a request that times out): it answers 504 or cuts the response
// off, and the handler's later writes fail. A handler is expected to return
// once its context is done; one that ignores it keeps its connection (HTTP/1)
// or stream (HTTP/2) open until it returns (OnPostTimeout reports when).
//
// # Stage trace
//
// Trace is the per-request record of the chain: which stages a request
// entered and when, the steps its handler reported (RecordStep with
// StepAdmission, StepStorage) and which stage or step rejected it
// (Trace.RejectedBy). annex.Chain puts one in every request's context;
// TraceFrom returns it, or nil, whose methods do nothing.
package filters
