// Package apiservice registers an aggregated API server with the cluster it
// serves: one apiregistration.k8s.io/v1 APIService per served group and
// version, pointing at the Service in front of the server, with the CA of
// the certificate it serves as caBundle, so nobody copies a CA into a
// manifest or falls back to insecureSkipTLSVerify (metrics-server#544).
//
// Priorities default to the ones kube-apiserver gives the APIServices of
// CustomResourceDefinitions (groupPriorityMinimum 1000, versionPriority
// 100): kube-aggregator then orders the versions of the group as it orders
// a CRD's, by kube's version ordering (v1 > v1beta1 > v1alpha1).
//
// [Registrar.Run] creates each APIService or updates its spec (the
// resourceVersion it read as precondition), retrying with backoff until it
// succeeds, and checks again every Interval so an edited or deleted
// APIService is put back. It needs create, get and update on
// apiservices.apiregistration.k8s.io. [Registrar.Ready] is a /readyz check:
// ready once every APIService was written at the last attempt.
//
// [Service] also names the hosts the serving certificate must carry: the
// aggregator dials <name>.<namespace>.svc and verifies that name.
//
//	r, err := apiservice.New(apiservice.Config{
//		Client:   cluster,
//		Service:  apiservice.Service{Namespace: "annex", Name: "environments"},
//		Versions: []apiservice.GroupVersion{{Group: "example.annex.dev", Version: "v1"}},
//		CABundle: func() ([]byte, error) { return os.ReadFile(caFile) },
//	})
//	go r.Run(ctx)
package apiservice
