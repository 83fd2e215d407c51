package version

import (
	"encoding/json"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is the /version document, as kube-apiserver's version.Info.
type Info struct {
	Major        string `json:"major"`
	Minor        string `json:"minor"`
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

// Kubernetes is the Kubernetes release whose API conventions annex
// serves: its wire behaviour is compared with kube-apiserver of this minor
// version in the e2e module. /version reports it as the gitVersion's core,
// so that kubectl's version-skew check, which compares minor versions,
// passes for every kubectl it supports.
const Kubernetes = "v1.33.0"

// complete fills zero fields from the build information of the binary:
// gitVersion is Kubernetes with the program's own version (the main
// module's, else annex's, else "devel") as semver build metadata, e.g.
// v1.33.0+v0.4.2; major and minor follow gitVersion.
func (v Info) complete() Info {
	own := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		own = bi.Main.Version
		if own == "" || own == "(devel)" {
			own = ""
			for _, d := range bi.Deps {
				if d.Path == "github.com/annexapi/annex" {
					own = "annex-" + d.Version
				}
			}
		}
		for _, kv := range bi.Settings {
			switch {
			case kv.Key == "vcs.revision" && v.GitCommit == "":
				v.GitCommit = kv.Value
			case kv.Key == "vcs.time" && v.BuildDate == "":
				v.BuildDate = kv.Value
			case kv.Key == "vcs.modified" && v.GitTreeState == "":
				v.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[kv.Value]
			}
		}
	}
	if v.GitVersion == "" {
		v.GitVersion = Kubernetes + "+" + buildMetadata(own)
	}
	if v.Major == "" && v.Minor == "" {
		if maj, rest, ok := strings.Cut(strings.TrimPrefix(v.GitVersion, "v"), "."); ok {
			min, _, _ := strings.Cut(rest, ".")
			v.Major, v.Minor = maj, min
		}
	}
	v.GoVersion = runtime.Version()
	v.Compiler = runtime.Compiler
	v.Platform = runtime.GOOS + "/" + runtime.GOARCH
	return v
}

// buildMetadata makes a version a semver build-metadata string: only
// [0-9A-Za-z-.], anything else becomes '-'; empty is "devel".
func buildMetadata(version string) string {
	if version == "" {
		return "devel"
	}
	b := []byte(version)
	for i, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '.') {
			b[i] = '-'
		}
	}
	return string(b)
}

// Handler serves v (its zero fields completed from the build) as JSON.
func (v Info) Handler() http.Handler {
	body, _ := json.Marshal(v.complete()) // strings only: it cannot fail
	body = append(body, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}
