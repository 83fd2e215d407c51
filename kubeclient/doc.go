// Package kubeclient is a minimal HTTPS client for a kube-apiserver: enough
// for an aggregated server to read a ConfigMap, post TokenReviews and
// SubjectAccessReviews, and watch, without client-go.
//
// # Configuration
//
// [InClusterConfig] reads the pod's service-account token and CA
// (/var/run/secrets/kubernetes.io/serviceaccount) and KUBERNETES_SERVICE_HOST
// and _PORT; [LoadKubeconfig] reads a kubeconfig file (the current context,
// or a named one): server, certificate-authority(-data), client certificate
// and key, token or token file. Both return a [Config]; [New] makes a
// [Client] from it.
//
//	cfg, err := kubeclient.LoadKubeconfig("/etc/annex/auth.kubeconfig", "")
//	c, err := kubeclient.New(*cfg)
//	var cm ConfigMap
//	err = c.Get(ctx, "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication", &cm)
//
// # Retries
//
// As client-go's webhook client: a request that fails to connect, or is
// answered 429 or 5xx, is retried with exponential backoff (500ms, ×1.5,
// 20% jitter, 5 attempts), honouring Retry-After. Each attempt has its own
// timeout ([Config].Timeout, 10s by default) inside the caller's context.
//
// # Security
//
// Redirects are never followed (CVE-2022-3172, CVE-2020-8559): a 3xx is an
// error. Response bodies are not logged. The bearer token file is re-read
// (at most once a minute) so rotated projected tokens are picked up.
package kubeclient
