package kubeflags

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/annexapi/annex"
)

// addRegistrationFlags binds Builder.Registration: the Service in front of
// the server and its APIServices (annex's own flags; kube's aggregated
// servers leave registration to a manifest).
func addRegistrationFlags(fs *flag.FlagSet, b *annex.Builder) {
	r := &b.Registration
	port := r.Port
	if port == 0 {
		port = 443
	}
	fs.StringVar(&r.Service, "service", r.Service, "The Service in front of this server as name.namespace (e.g. environments.annex-system): its DNS names go into the generated serving certificate, /readyz checks the serving certificate carries <name>.<namespace>.svc, and --register-apiservice points the APIServices at it.")
	fs.BoolVar(&r.Register, "register-apiservice", r.Register, "Create or update one APIService per served version with the caBundle of the serving CA and kube's priorities for CRDs, and put them back when edited or deleted (needs --service and --delegated-auth, and create, get and update on apiservices.apiregistration.k8s.io).")
	fs.IntVar(&r.Port, "apiservice-port", port, "The Service port the APIServices name.")
	fs.Func("apiservice-group-priority-minimum", "The APIServices' spec.groupPriorityMinimum. Default 1000, kube's for CRDs.", int32Flag(&r.GroupPriorityMinimum))
	fs.Func("apiservice-version-priority", "The APIServices' spec.versionPriority. Default 100, kube's for CRDs.", int32Flag(&r.VersionPriority))
	fs.StringVar(&r.CAFile, "apiservice-ca-file", r.CAFile, "The CA bundle to put in the APIServices' caBundle. Empty means the generated serving CA, or the last certificate of --tls-cert-file.")
}

// int32Flag parses a positive int32 into p.
func int32Flag(p *int32) func(string) error {
	return func(s string) error {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n <= 0 {
			return fmt.Errorf("%q: want a positive integer", s)
		}
		*p = int32(n)
		return nil
	}
}
