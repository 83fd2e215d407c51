// This file holds request-header (front proxy) authentication configured
// from files rather than read from the cluster: in standalone mode
// (Authentication.RequestHeader, kube-apiserver's --requestheader-* flags on
// their own) and in delegated mode with Delegation.SkipLookup
// (--authentication-skip-lookup).

package annex

import (
	"errors"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
)

// RequestHeader configures request-header (front proxy) authentication
// from files: a request whose client certificate verifies against
// ClientCAFile (and whose CN Names allows) is authenticated as the user its
// headers name, as kube-apiserver does with its --requestheader-* flags.
// The same shape configures a standalone server's front proxy
// (Authentication.RequestHeader) and overrides a delegated server's
// (Delegation.RequestHeader).
type RequestHeader struct {
	// ClientCAFile is the CA bundle the front proxy's client certificate
	// must chain to (--requestheader-client-ca-file), reloaded when it
	// changes. It must share no certificate with ClientCAFile.
	ClientCAFile string
	// Names are the allowed CNs (--requestheader-allowed-names; empty means
	// any certificate from ClientCAFile) and the header names
	// (--requestheader-username-headers, -group-headers,
	// -extra-headers-prefix, -uid-headers). Empty lists take Kubernetes'
	// defaults (authn.DefaultRequestHeaderNames), so a front proxy
	// configured for a delegated server works with a standalone one.
	Names authn.RequestHeaderNames
}

// validateRequestHeader is phase 1's part for request-header authentication
// from files: the fields that conflict, the CA bundle loaded, and checked
// distinct from the client CA.
func (c *Builder) validateRequestHeader(p *plan, reload certs.ReloadConfig, bad func(string, error)) {
	an := c.Authentication
	if d := an.Delegation; d != nil && d.SkipLookup {
		if d.TolerateMissingRequestHeaderCA {
			bad("Delegation.TolerateMissingRequestHeaderCA and Delegation.SkipLookup", errors.New("both set: without the lookup nothing can be missing"))
		}
		if p.clientCA != nil && p.requestHeaderCA != nil {
			bad("Delegation.RequestHeader.ClientCAFile", authn.CheckDistinctCAs(p.clientCA, p.requestHeaderCA))
		}
	}
	r := an.RequestHeader
	if r == nil {
		return
	}
	switch {
	case an.Delegation != nil:
		bad("RequestHeader and Delegation", errors.New("both set: a delegated server takes its front proxy from Delegation (its RequestHeader, or the cluster)"))
		return
	case an.Authenticator != nil:
		bad("Authenticator and RequestHeader", errors.New("both set: Authenticator replaces the authentication the other configures"))
		return
	case r.ClientCAFile == "":
		bad("RequestHeader.ClientCAFile", errors.New("is required"))
		return
	}
	var err error
	p.requestHeaderCA, err = certs.NewCABundle(r.ClientCAFile, reload)
	bad("RequestHeader.ClientCAFile", err)
	if err == nil && p.clientCA != nil {
		bad("RequestHeader.ClientCAFile", authn.CheckDistinctCAs(p.clientCA, p.requestHeaderCA))
	}
}

// staticRequestHeader sets up request-header authentication from files:
// r's names over the CA bundle phase 1 loaded.
func (s *Server) staticRequestHeader(r RequestHeader, p *plan, cfg *authn.Config, fd *frontDoor) {
	s.runners = append(s.runners, p.requestHeaderCA.Start)
	cfg.RequestHeader = &authn.RequestHeaderConfig{CA: p.requestHeaderCA, Names: authn.StaticRequestHeaderNames(r.Names)}
	fd.headerNames = cfg.RequestHeader.Names
}
