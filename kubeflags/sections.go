// This file holds --help as kube's components print it: the flags grouped
// in named sections ("Secure serving flags:", "Authentication flags:", ...),
// each flag with kube's type name.

package kubeflags

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// flagSection names the section of one of the server's flags, as kube's
// servers group them; "" for a flag that is not the server's.
func flagSection(name string) string {
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("etcd-", "postgres-", "encryption-provider-config", "storage-", "watch-cache", "delete-collection-workers"):
		return "Etcd"
	case has("secure-port", "bind-address", "tls-", "http2-", "cert-dir", "permit-"):
		return "Secure serving"
	case has("audit-"):
		return "Audit"
	case has("profiling", "contention-profiling", "enable-priority-and-fairness", "feature-gates"):
		return "Features"
	case has("client-ca-file", "token-auth-file", "authentication-", "requestheader-", "oidc-", "delegated-auth"):
		return "Authentication"
	case has("authorization-"):
		return "Authorization"
	case name == "service" || name == "register-apiservice" || has("apiservice-"):
		return "APIService registration"
	case name == "v" || has("vmodule", "logging-format", "log-"):
		return "Logs"
	case has("data-dir", "request-timeout", "min-request-timeout", "max-requests-inflight", "max-mutating-requests-inflight",
		"flowcontrol-config-file", "shutdown-", "livez-", "goaway-chance"):
		return "Generic"
	}
	return ""
}

// sectionOrder is the order sections print in, kube's for an aggregated
// server; the program's own flags come last, as "Misc".
var sectionOrder = [...]string{"Generic", "Etcd", "Secure serving", "Audit", "Features", "Authentication", "Authorization", "APIService registration", "Logs", "Misc"}

// pflagTypes are the type names --help shows for flags whose values are
// this package's own types, as kube shows its equivalents.
func pflagType(name string) string {
	switch name {
	case "authorization-always-allow-paths", "authorization-policy-file", "requestheader-allowed-names", "requestheader-username-headers",
		"requestheader-group-headers", "requestheader-extra-headers-prefix", "requestheader-uid-headers", "oidc-signing-algs",
		"flowcontrol-config-file", "etcd-servers":
		return "strings"
	case "oidc-client-id":
		return "string"
	case "oidc-required-claim":
		return "mapStringString"
	case "apiservice-group-priority-minimum", "apiservice-version-priority":
		return "int32"
	case "min-request-timeout", "max-requests-inflight", "max-mutating-requests-inflight":
		return "int"
	case "enable-priority-and-fairness":
		return "bool"
	case "etcd-compaction-interval":
		return "duration"
	case "v":
		return "Level"
	case "vmodule":
		return "pattern=N,..."
	}
	return ""
}

// namedType gives a flag value the type name --help shows.
type namedType struct {
	pflag.Value
	name string
}

func (n namedType) Type() string { return n.name }

// IsBoolFlag keeps a wrapped bool a bool for pflag.
func (n namedType) IsBoolFlag() bool {
	b, ok := n.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// PrintSections writes the flags of fs as kube's components print
// --help: a section per kind ("Secure serving flags:", "Authentication
// flags:", ...), each listing its flags in the --name form with their type
// and default; flags that are not the server's (the program's own) come
// last, under "Misc flags:". AddFlags makes it fs's usage.
func PrintSections(w io.Writer, fs *pflag.FlagSet) {
	sets := map[string]*pflag.FlagSet{}
	fs.VisitAll(func(fl *pflag.Flag) {
		sec := flagSection(fl.Name)
		if sec == "" {
			sec = "Misc"
		}
		if sets[sec] == nil {
			sets[sec] = pflag.NewFlagSet(sec, pflag.ContinueOnError)
		}
		sets[sec].AddFlag(fl)
	})
	for _, sec := range sectionOrder {
		if s := sets[sec]; s != nil {
			fmt.Fprintf(w, "\n%s flags:\n\n%s", sec, s.FlagUsagesWrapped(0))
		}
	}
}

// sectionedUsage is the usage AddFlags gives fs.
func sectionedUsage(fs *pflag.FlagSet) func() {
	return func() {
		nameTypes(fs) // flags added after AddFlags too
		fmt.Fprintf(fs.Output(), "Usage:\n  %s [flags]\n", fs.Name())
		PrintSections(fs.Output(), fs)
	}
}

// nameTypes renames the types of fs's flags that are this package's own.
func nameTypes(fs *pflag.FlagSet) {
	fs.VisitAll(func(fl *pflag.Flag) {
		if t := pflagType(fl.Name); t != "" && fl.Value.Type() != t {
			fl.Value = namedType{Value: fl.Value, name: t}
		}
	})
}
