// This file holds Config and the two ways to make one: in-cluster and from a
// kubeconfig file.

package kubeclient

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Config says how to reach and authenticate to a kube-apiserver.
type Config struct {
	// Host is the server's base URL, e.g. https://10.0.0.1:443. Required.
	Host string
	// CAData is the PEM bundle that verifies the server. Empty means the
	// system roots.
	CAData []byte
	// ServerName overrides the name the server certificate is checked for.
	// Empty means the host of Host.
	ServerName string
	// CertData and KeyData are a PEM client certificate and key. Empty means
	// none.
	CertData, KeyData []byte
	// BearerToken is sent as "Authorization: Bearer <token>". Empty means
	// none (or BearerTokenFile).
	BearerToken string
	// BearerTokenFile holds the token, re-read at most once a minute so a
	// rotated projected token is picked up. Used when BearerToken is empty.
	BearerTokenFile string
	// Timeout bounds each attempt. Zero means 10s (the webhook default).
	Timeout time.Duration
	// Backoff controls retries. Its zero value is client-go's webhook
	// backoff.
	Backoff Backoff
	// UserAgent is sent with each request. Empty means "annex".
	UserAgent string
}

// Backoff is the retry schedule of requests that fail to connect or are
// answered 429 or 5xx.
type Backoff struct {
	// Initial is the first wait. Zero means 500ms.
	Initial time.Duration
	// Factor multiplies the wait after each retry. Zero means 1.5.
	Factor float64
	// Jitter adds up to this fraction of the wait at random. Zero means 0.2;
	// negative means none.
	Jitter float64
	// Steps is the number of attempts in all. Zero means 5; negative or 1
	// means no retry.
	Steps int
}

// The in-cluster locations Kubernetes mounts for every pod.
const (
	ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// InClusterOptions configures InClusterConfigWith; its zero value is the real
// pod environment.
type InClusterOptions struct {
	// Dir holds token and ca.crt. Empty means ServiceAccountDir.
	Dir string
	// Getenv reads KUBERNETES_SERVICE_HOST and _PORT. nil means os.Getenv.
	Getenv func(string) string
}

// InClusterConfig returns the configuration of a pod: the API server at
// KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT, verified with the
// service-account CA, authenticated with the (re-read) service-account token.
func InClusterConfig() (*Config, error) { return InClusterConfigWith(InClusterOptions{}) }

// InClusterConfigWith is InClusterConfig with the environment and directory
// given, for tests and unusual mounts.
func InClusterConfigWith(o InClusterOptions) (*Config, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := o.Dir
	if dir == "" {
		dir = ServiceAccountDir
	}
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, ErrNotInCluster
	}
	tokenFile := filepath.Join(dir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return &Config{Host: "https://" + net.JoinHostPort(host, port), CAData: ca, BearerTokenFile: tokenFile}, nil
}

// kubeconfig is the part of a kubeconfig file this package reads.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			TLSServerName            string `yaml:"tls-server-name"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			ClientCertificate     string `yaml:"client-certificate"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKey             string `yaml:"client-key"`
			ClientKeyData         string `yaml:"client-key-data"`
			Token                 string `yaml:"token"`
			TokenFile             string `yaml:"tokenFile"`
			Username              string `yaml:"username"`
			Password              string `yaml:"password"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// LoadKubeconfig reads the kubeconfig file at path and returns the
// configuration of context contextName (empty: the current context). Relative
// file references resolve against the file's directory. Exec and auth-provider
// plugins are not supported; insecure-skip-tls-verify is refused.
func LoadKubeconfig(path, contextName string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return ParseKubeconfig(data, filepath.Dir(path), contextName)
}

// ParseKubeconfig is LoadKubeconfig on the file's bytes; dir resolves
// relative file references.
func ParseKubeconfig(data []byte, dir, contextName string) (*Config, error) {
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if contextName == "" {
		contextName = kc.CurrentContext
	}
	ctxIdx := -1
	for i := range kc.Contexts {
		if kc.Contexts[i].Name == contextName {
			ctxIdx = i
		}
	}
	if ctxIdx < 0 {
		return nil, fmt.Errorf("%w: context %q not found", ErrInvalidConfig, contextName)
	}
	want := kc.Contexts[ctxIdx].Context
	cfg := &Config{}
	var err error
	found := false
	for _, c := range kc.Clusters {
		if c.Name != want.Cluster {
			continue
		}
		found = true
		if c.Cluster.InsecureSkipTLSVerify {
			return nil, fmt.Errorf("%w: cluster %q: insecure-skip-tls-verify is not supported", ErrInvalidConfig, c.Name)
		}
		cfg.Host, cfg.ServerName = c.Cluster.Server, c.Cluster.TLSServerName
		if cfg.CAData, err = dataOrFile(c.Cluster.CertificateAuthorityData, c.Cluster.CertificateAuthority, dir); err != nil {
			return nil, err
		}
	}
	if !found || cfg.Host == "" {
		return nil, fmt.Errorf("%w: cluster %q not found or has no server", ErrInvalidConfig, want.Cluster)
	}
	for _, u := range kc.Users {
		if u.Name != want.User {
			continue
		}
		if cfg.CertData, err = dataOrFile(u.User.ClientCertificateData, u.User.ClientCertificate, dir); err != nil {
			return nil, err
		}
		if cfg.KeyData, err = dataOrFile(u.User.ClientKeyData, u.User.ClientKey, dir); err != nil {
			return nil, err
		}
		cfg.BearerToken = u.User.Token
		if u.User.TokenFile != "" {
			cfg.BearerTokenFile = resolve(dir, u.User.TokenFile)
		}
	}
	return cfg, nil
}

func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

func dataOrFile(b64, file, dir string) ([]byte, error) {
	if b64 != "" {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		return b, nil
	}
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(resolve(dir, file))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return b, nil
}

// Credentials are one kubeconfig user's: a client certificate and key, a
// bearer token (or its file), or a username and password.
type Credentials struct {
	CertData, KeyData  []byte
	BearerToken        string
	BearerTokenFile    string
	Username, Password string
}

// ParseKubeconfigUsers returns the credentials of every user of a
// kubeconfig, by name (what a WebhookAdmissionConfiguration's kubeConfigFile
// holds: users named after the webhook hosts they authenticate to); dir
// resolves relative file references.
func ParseKubeconfigUsers(data []byte, dir string) (map[string]Credentials, error) {
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	out := make(map[string]Credentials, len(kc.Users))
	for _, u := range kc.Users {
		var c Credentials
		var err error
		if c.CertData, err = dataOrFile(u.User.ClientCertificateData, u.User.ClientCertificate, dir); err != nil {
			return nil, fmt.Errorf("user %q: %w", u.Name, err)
		}
		if c.KeyData, err = dataOrFile(u.User.ClientKeyData, u.User.ClientKey, dir); err != nil {
			return nil, fmt.Errorf("user %q: %w", u.Name, err)
		}
		c.BearerToken, c.Username, c.Password = u.User.Token, u.User.Username, u.User.Password
		if u.User.TokenFile != "" {
			c.BearerTokenFile = resolve(dir, u.User.TokenFile)
		}
		out[u.Name] = c
	}
	return out, nil
}
