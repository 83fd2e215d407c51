// This file puts the server behind kube-aggregator: the Service's names in
// the generated serving certificate, the /readyz check that the serving
// certificate carries the name the aggregator verifies, and the APIServices
// kept registered (package apiservice).

package annex

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/annexapi/annex/apiservice"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/healthz"
)

// Registration configures the server's place behind kube-aggregator.
type Registration struct {
	// Service is the Service in front of the server as name.namespace
	// (--service): the generated serving certificate carries its names, and
	// /readyz (serving-certificate-name) checks that the serving
	// certificate carries <name>.<namespace>.svc, the name kube-aggregator
	// verifies.
	Service string
	// Register creates or updates one APIService per served version
	// (--register-apiservice), kube's priorities for CRDs, the caBundle of
	// the serving CA, and puts them back when edited or deleted; /readyz
	// (apiservice-registration) waits for it. It needs Service and
	// Authentication.Delegation, and create, get and update on apiservices.
	Register bool
	// Port is the Service port the APIServices name (--apiservice-port).
	// Zero means 443.
	Port int
	// CAFile is the caBundle (--apiservice-ca-file). Zero means the
	// generated serving CA, or the last certificate of Serving.CertFile.
	CAFile string
	// GroupPriorityMinimum and VersionPriority are the APIServices'
	// priorities. Zero means kube's for CRDs: 1000 and 100.
	GroupPriorityMinimum, VersionPriority int32
}

func (c *Builder) validateRegistration(bad func(string, error)) {
	r := c.Registration
	if r.Service != "" {
		_, err := apiservice.ParseService(r.Service)
		bad("Registration.Service", err)
	}
	switch {
	case r.Register && r.Service == "":
		bad("Registration.Register", errors.New("needs Registration.Service (--register-apiservice needs --service name.namespace)"))
	case r.Register && c.Authentication.Delegation == nil:
		bad("Registration.Register", errors.New("needs delegated mode: Authentication.Delegation (--register-apiservice needs --delegated-auth)"))
	}
}

// register adds the serving-certificate-name check and the registrar.
func (a *assembly) register() error {
	r, c, s := a.c.Registration, a.c, a.s
	if r.Service == "" {
		return nil
	}
	svc, _ := apiservice.ParseService(r.Service)
	certFile := c.Serving.CertFile
	if certFile == "" {
		certFile = filepath.Join(c.certDir(), "serving.crt")
	}
	s.readyChecks = append(s.readyChecks, healthz.ReadyCheck("serving-certificate-name", certs.HostCheck{CertFile: certFile, Host: svc.Host()}))
	if !r.Register {
		return nil
	}
	var versions []apiservice.GroupVersion
	for _, res := range a.resources {
		versions = append(versions, apiservice.GroupVersion{Group: res.Group, Version: res.Version})
	}
	svc.Port = int32(r.Port)
	reg, err := apiservice.New(apiservice.Config{Client: a.p.clusterClient, Service: svc, Versions: versions,
		CABundle: func() ([]byte, error) { return a.caBundle(certFile) }, ManagedBy: c.Name,
		GroupPriorityMinimum: r.GroupPriorityMinimum, VersionPriority: r.VersionPriority, Logger: s.log.Named("apiservice")})
	if err != nil {
		return err
	}
	s.runners = append(s.runners, reg.Run)
	s.readyChecks = append(s.readyChecks, healthz.ReadyCheck("apiservice-registration", reg))
	return nil
}

// caBundle is Registration.CAFile, the generated serving CA, or the last
// certificate of the serving chain in certFile.
func (a *assembly) caBundle(certFile string) ([]byte, error) {
	switch {
	case a.c.Registration.CAFile != "":
		return os.ReadFile(a.c.Registration.CAFile)
	case a.s.servingCA != nil:
		return a.s.servingCA.CertPEM, nil
	}
	b, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	cs, err := certs.ParseCerts(b)
	if err != nil {
		return nil, err
	}
	return certs.EncodeCert(cs[len(cs)-1]), nil
}

// serviceHosts are the names of Registration.Service, for the generated
// serving certificate.
func (a *assembly) serviceHosts() []string {
	svc, err := apiservice.ParseService(a.c.Registration.Service)
	if err != nil {
		return nil
	}
	return svc.Hosts()
}
