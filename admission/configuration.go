// This file holds kube's AdmissionConfiguration (--admission-control-config-file):
// per admission plugin, its configuration inline or in a file. The plugins
// that take one here are the webhook plugins, whose
// WebhookAdmissionConfiguration names a kubeconfig with the credentials the
// server presents to each webhook, looked up by host as kube-apiserver does.

package admission

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/annexapi/annex/kubeclient"
)

// Enabled returns the plugins of ps that are not disabled: a plugin is
// disabled when it is Named with one of the names in disabled (kube's
// --disable-admission-plugins, applied to plugins made in Go as to those
// from files).
func Enabled[P any](ps []P, disabled []string) []P {
	var out []P
	for _, p := range ps {
		if n, ok := any(p).(Named); !ok || !slices.Contains(disabled, n.Name()) {
			out = append(out, p)
		}
	}
	return out
}

// PluginNames are kube's names of the admission plugins a server built on
// this package runs, in kube's order: NamespaceLifecycle (delegated mode),
// MutatingAdmissionPolicy, MutatingAdmissionWebhook,
// ValidatingAdmissionPolicy, ValidatingAdmissionWebhook. All are on by
// default, as in kube. The slice is fresh on every call.
func PluginNames() []string {
	return []string{"NamespaceLifecycle", "MutatingAdmissionPolicy", "MutatingAdmissionWebhook",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook"}
}

// Configuration is what an AdmissionConfiguration configures: the
// credentials the mutating and validating webhook plugins present to each
// webhook (WebhookOptions.Credentials). A nil function means anonymous.
type Configuration struct {
	MutatingCredentials, ValidatingCredentials func(target string) (*WebhookCredentials, error)
}

// LoadConfiguration reads an AdmissionConfiguration file
// (--admission-control-config-file).
func LoadConfiguration(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Plugins    []struct {
			Name          string    `yaml:"name"`
			Path          string    `yaml:"path"`
			Configuration yaml.Node `yaml:"configuration"`
		} `yaml:"plugins"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case doc.Kind != "AdmissionConfiguration":
		return nil, fmt.Errorf("%s: kind %q is not AdmissionConfiguration", path, doc.Kind)
	case !slices.Contains([]string{"apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1alpha1", "apiserver.config.k8s.io/v1alpha1"}, doc.APIVersion):
		return nil, fmt.Errorf("%s: apiVersion %q is not apiserver.config.k8s.io/v1", path, doc.APIVersion)
	}
	dir := filepath.Dir(path)
	out := &Configuration{}
	for i, p := range doc.Plugins {
		field := fmt.Sprintf("plugins[%d]", i)
		if known := PluginNames(); !slices.Contains(known, p.Name) {
			return nil, fmt.Errorf("%s: %s.name: admission plugin %q is unknown (known: %s)", path, field, p.Name, strings.Join(known, ", "))
		}
		cfg := p.Configuration
		if p.Path != "" {
			b, err := os.ReadFile(resolvePath(dir, p.Path))
			if err != nil {
				return nil, fmt.Errorf("%s: %s.path: %w", path, field, err)
			}
			if err := yaml.Unmarshal(b, &cfg); err != nil {
				return nil, fmt.Errorf("%s: %s.path: %w", path, field, err)
			}
		}
		if cfg.Kind == 0 {
			continue // nothing to configure
		}
		switch p.Name {
		case "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook":
			creds, err := webhookCredentials(&cfg, dir)
			if err != nil {
				return nil, fmt.Errorf("%s: %s.configuration: %w", path, field, err)
			}
			if p.Name == "MutatingAdmissionWebhook" {
				out.MutatingCredentials = creds
			} else {
				out.ValidatingCredentials = creds
			}
		default:
			return nil, fmt.Errorf("%s: %s.configuration: %s takes no configuration here", path, field, p.Name)
		}
	}
	return out, nil
}

func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// webhookCredentials reads a WebhookAdmissionConfiguration and returns the
// lookup of its kubeconfig's users.
func webhookCredentials(node *yaml.Node, dir string) (func(string) (*WebhookCredentials, error), error) {
	var wc struct {
		APIVersion     string `yaml:"apiVersion"`
		Kind           string `yaml:"kind"`
		KubeConfigFile string `yaml:"kubeConfigFile"`
	}
	if node.Kind == yaml.DocumentNode && len(node.Content) > 0 {
		node = node.Content[0]
	}
	if err := node.Decode(&wc); err != nil {
		return nil, err
	}
	if wc.Kind != "WebhookAdmissionConfiguration" && wc.Kind != "WebhookAdmission" {
		return nil, fmt.Errorf("kind %q is not WebhookAdmissionConfiguration", wc.Kind)
	}
	if wc.KubeConfigFile == "" {
		return nil, fmt.Errorf("kubeConfigFile: Required value")
	}
	file := resolvePath(dir, wc.KubeConfigFile)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("kubeConfigFile: %w", err)
	}
	users, err := kubeclient.ParseKubeconfigUsers(data, filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("kubeConfigFile: %w", err)
	}
	return func(target string) (*WebhookCredentials, error) {
		name, ok := lookupWebhookUser(users, target)
		if !ok {
			return nil, nil // anonymous
		}
		u := users[name]
		c := &WebhookCredentials{BearerToken: u.BearerToken, Username: u.Username, Password: u.Password}
		if c.BearerToken == "" && u.BearerTokenFile != "" {
			b, err := os.ReadFile(u.BearerTokenFile)
			if err != nil {
				return nil, fmt.Errorf("user %q: %w", name, err)
			}
			c.BearerToken = strings.TrimSpace(string(b))
		}
		if len(u.CertData) > 0 {
			cert, err := tls.X509KeyPair(u.CertData, u.KeyData)
			if err != nil {
				return nil, fmt.Errorf("user %q: %w", name, err)
			}
			c.Certificate = &cert
		}
		return c, nil
	}, nil
}

// lookupWebhookUser finds the kubeconfig user of a webhook target as
// kube-apiserver's authentication info resolver does: the exact name, then
// "*." wildcards of its later labels, then the same without a :443 port,
// then "*".
func lookupWebhookUser(users map[string]kubeclient.Credentials, target string) (string, bool) {
	try := func(t string) (string, bool) {
		if _, ok := users[t]; ok {
			return t, true
		}
		labels := strings.Split(t, ".")
		for i := 1; i < len(labels); i++ {
			n := "*." + strings.Join(labels[i:], ".")
			if _, ok := users[n]; ok {
				return n, true
			}
		}
		return "", false
	}
	if n, ok := try(target); ok {
		return n, true
	}
	if host, port, err := net.SplitHostPort(target); err == nil && port == "443" {
		if n, ok := try(host); ok {
			return n, true
		}
	}
	if _, ok := users["*"]; ok {
		return "*", true
	}
	return "", false
}
