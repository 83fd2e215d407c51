// This file holds request-header (front proxy) authentication configured
// from files rather than read from the cluster: in standalone mode
// (Builder.RequestHeader, kube-apiserver's --requestheader-* flags on their
// own) and in delegated mode with Delegation.SkipLookup
// (--authentication-skip-lookup).

package annex

import (
	"errors"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
)

// RequestHeader configures request-header authentication without a
// cluster: a request whose client certificate verifies against ClientCAFile
// (and whose CN is allowed) is authenticated as the user its headers name, as
// kube-apiserver does with its --requestheader-* flags. Header lists left
// empty take a delegated server's defaults, so a front proxy configured for
// one works with the other.
type RequestHeader struct {
	// ClientCAFile is the CA bundle the front proxy's client certificate
	// must chain to (--requestheader-client-ca-file), reloaded when it
	// changes. Required; it must share no certificate with ClientCAFile.
	ClientCAFile string
	// AllowedNames are the client certificate CNs trusted to assert
	// identities (--requestheader-allowed-names). Empty means any
	// certificate from ClientCAFile.
	AllowedNames []string
	// UsernameHeaders are tried in order for the user name
	// (--requestheader-username-headers). Empty means X-Remote-User.
	UsernameHeaders []string
	// GroupHeaders hold the groups (--requestheader-group-headers). Empty
	// means X-Remote-Group.
	GroupHeaders []string
	// ExtraHeaderPrefixes start the headers of extra fields
	// (--requestheader-extra-headers-prefix). Empty means X-Remote-Extra-.
	ExtraHeaderPrefixes []string
	// UIDHeaders are tried in order for the UID
	// (--requestheader-uid-headers). Empty means none, as in Kubernetes
	// (an older front proxy may pass a client's X-Remote-Uid through).
	UIDHeaders []string
}

// names is r's provider of allowed names and headers, defaults filled in.
func (r *RequestHeader) names() authn.RequestHeaderNamesProvider {
	return authn.StaticRequestHeaderNames(authn.RequestHeaderNames{
		AllowedNames: r.AllowedNames, UsernameHeaders: r.UsernameHeaders, GroupHeaders: r.GroupHeaders,
		ExtraHeaderPrefixes: r.ExtraHeaderPrefixes, UIDHeaders: r.UIDHeaders,
	})
}

// delegationHeaders is the RequestHeader a delegation that skips the lookup
// configures from its own fields; nil when it names no request-header CA.
func delegationHeaders(d *Delegation) *RequestHeader {
	if d.RequestHeaderClientCAFile == "" {
		return nil
	}
	return &RequestHeader{ClientCAFile: d.RequestHeaderClientCAFile, AllowedNames: d.RequestHeaderAllowedNames,
		UsernameHeaders: d.RequestHeaderUsernameHeaders, GroupHeaders: d.RequestHeaderGroupHeaders,
		ExtraHeaderPrefixes: d.RequestHeaderExtraPrefixes, UIDHeaders: d.RequestHeaderUIDHeaders}
}

// validateRequestHeader is phase 1's part for request-header authentication
// from files: the fields that conflict, the CA bundle loaded, and checked
// distinct from the client CA.
func (c *Builder) validateRequestHeader(p *plan, reload certs.ReloadConfig, bad func(string, error)) {
	if d := c.Delegation; d != nil && d.SkipLookup {
		if d.TolerateMissingRequestHeaderCA {
			bad("Delegation.TolerateMissingRequestHeaderCA and Delegation.SkipLookup", errors.New("both set: without the lookup nothing can be missing"))
		}
		if p.clientCA != nil && p.requestHeaderCA != nil {
			bad("Delegation.RequestHeaderClientCAFile", authn.CheckDistinctCAs(p.clientCA, p.requestHeaderCA))
		}
	}
	r := c.RequestHeader
	if r == nil {
		return
	}
	switch {
	case c.Delegation != nil:
		bad("RequestHeader and Delegation", errors.New("both set: a delegated server takes its front proxy from Delegation (RequestHeader* fields, or the cluster)"))
		return
	case c.Authenticator != nil:
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
// r's settings over the CA bundle phase 1 loaded.
func (s *Server) staticRequestHeader(r *RequestHeader, p *plan, cfg *authn.Config) {
	s.runners = append(s.runners, p.requestHeaderCA.Start)
	cfg.RequestHeader = &authn.RequestHeaderConfig{CA: p.requestHeaderCA, Names: r.names()}
}
