// Package annex builds Kubernetes aggregated (extension) API servers: the
// servers a kube-apiserver proxies an API group to after an APIService
// registration. Declare resources, call the Builder, run the Server: the group
// is served with discovery, watch, Status errors, health, metrics and the rest,
// indistinguishable on the wire from a k8s.io/apiserver server, without
// importing k8s.io/* or generating code.
//
// # Stages
//
// A request walks a fixed order of stages (TLS, stack growth, the shutdown
// drain, request info and limits, tracing, metrics, authentication, audit,
// impersonation, flow control, authorization, the resource handlers). The
// order lives in one place, stages.go, as data (DefaultStages), every wrapper
// of the path a row: each Stage names what it needs from the request context
// and what it provides, and Chain rejects an order in which a stage would
// read something no earlier stage provides. A wrong chain is an error at
// build time, never a 500 at request time. Chain also puts a filters.Trace in
// every request's context: which stages the request entered (and when), the
// steps its handler reported, and so which stage rejected it (a 429 while
// draining names shutdown-drain).
//
// # Build
//
// The Builder is grouped by concern: Serving, Authentication, Authorization,
// Admission, Storage, Limits, Shutdown, Audit, FlowControl, Observability.
// Build works in two phases. The first (validate.go) checks the whole
// declaration and returns every problem at once, each naming its field (a
// malformed resource, an unreadable token or policy file,
// Authentication.Authenticator set together with TokenAuthFile, a misplaced
// stage), with no side effect. Only then does the second (assemble.go), in
// named steps, make the data directory, certificates, kubeconfig, store and
// socket. kube's command line is package kubeflags: it registers kube's flags
// and applies them to a Builder, and a flag given that has no effect in the
// chosen mode is an error naming it. The root package imports no flag
// library.
//
// # Composition
//
// The Builder is sugar over the public packages (meta, filters, authn, authz,
// admission, flowcontrol, audit, storage, watch, rest, healthz, certs,
// metrics, otlp): anything it does, a program can do by hand with them,
// starting from DefaultStages, filling it with SetFilter and wrapping it with
// Chain; Example_byHand does so and serves what the Builder's server serves.
// Stage packages never import each other; they meet through the request
// context (package filters), and a test enforces that rule. Package
// annextest runs a Builder's server in a test.
package annex
