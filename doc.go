// Package annex builds Kubernetes aggregated (extension) API servers: the
// servers a kube-apiserver proxies an API group to after an APIService
// registration. Declare resources, call the Builder, run the Server: the group
// is served with discovery, watch, Status errors, health, metrics and the rest,
// indistinguishable on the wire from a k8s.io/apiserver server, without
// importing k8s.io/* or generating code.
//
// # Stages
//
// A request walks a fixed order of stages (TLS, request info and limits,
// authentication, audit, impersonation, flow control, authorization, the
// resource handlers). The order lives in one place, stages.go, as data
// (DefaultStages): each Stage names what it needs from the request context and
// what it provides, and Chain rejects an order in which a stage would read
// something no earlier stage provides. A wrong chain is an error at build time,
// never a 500 at request time. Chain also puts a filters.Trace in every
// request's context: which stages the request entered (and when), the steps
// its handler reported, and so which stage rejected it.
//
// # Build
//
// Build works in two phases. The first checks the whole declaration and
// returns every problem at once, each naming its field (a malformed resource,
// an unreadable token or policy file, Authenticator set together with
// TokenAuthFile, a misplaced stage), with no side effect. Only then does the
// second make the data directory, certificates, kubeconfig, store and socket.
// Flags (AddFlags) are checked in the first phase too: a flag given that has
// no effect in the chosen mode (flagrules.go) is an error naming it.
//
// # Composition
//
// The Builder is sugar over the public packages (meta, filters, authn, authz,
// storage, rest, healthz, certs, metrics): anything it does, a program can do by
// hand with them, starting from DefaultStages, filling it with SetFilter and
// wrapping it with Chain. Stage packages never import each other; they meet through the
// request context (package filters), and a test enforces that rule.
package annex
