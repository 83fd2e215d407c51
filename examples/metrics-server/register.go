// This file holds self-registration: the server creates or updates its own
// APIService with the caBundle of the certificate it serves, so nobody has to
// copy a CA into a manifest or fall back to insecureSkipTLSVerify
// (metrics-server#544 asks for this).

package main

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/kubeclient"
)

const apiServicesPath = "/apis/apiregistration.k8s.io/v1/apiservices"

// APIService is the part of apiregistration.k8s.io/v1 APIService this
// server writes.
type APIService struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   apiServiceMeta `json:"metadata"`
	Spec       apiServiceSpec `json:"spec"`
}

type apiServiceMeta struct {
	Name            string            `json:"name"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
}

type apiServiceSpec struct {
	Group                 string     `json:"group"`
	Version               string     `json:"version"`
	Service               serviceRef `json:"service"`
	CABundle              []byte     `json:"caBundle"` // base64 in JSON, as the API wants
	GroupPriorityMinimum  int32      `json:"groupPriorityMinimum"`
	VersionPriority       int32      `json:"versionPriority"`
	InsecureSkipTLSVerify bool       `json:"insecureSkipTLSVerify,omitempty"`
}

type serviceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Port      int32  `json:"port"`
}

// apiService is v1beta1.metrics.k8s.io pointing at the Service, with the
// priorities metrics-server's manifest uses.
func apiService(namespace, name string, port int32, caPEM []byte) APIService {
	return APIService{
		APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService",
		Metadata: apiServiceMeta{Name: "v1beta1.metrics.k8s.io", Labels: map[string]string{"app.kubernetes.io/managed-by": "annex-metrics-server"}},
		Spec: apiServiceSpec{Group: "metrics.k8s.io", Version: "v1beta1",
			Service:  serviceRef{Namespace: namespace, Name: name, Port: port},
			CABundle: caPEM, GroupPriorityMinimum: 100, VersionPriority: 100},
	}
}

// register creates want, or updates the existing APIService's spec to it
// (keeping its metadata, with its resourceVersion as the precondition).
func register(ctx context.Context, c *kubeclient.Client, want APIService) (created bool, err error) {
	var have APIService
	err = c.Get(ctx, apiServicesPath+"/"+want.Metadata.Name, &have)
	if errors.Is(err, kubeclient.ErrNotFound) {
		return true, c.Post(ctx, apiServicesPath, want, nil)
	}
	if err != nil {
		return false, err
	}
	upd := want
	upd.Metadata.ResourceVersion = have.Metadata.ResourceVersion
	return false, c.Do(ctx, "PUT", apiServicesPath+"/"+want.Metadata.Name, upd, nil)
}

// keepRegistered registers want, retrying with backoff (1s doubling to 30s)
// until it succeeds or ctx ends, then checks again every 5 minutes so an
// edited or deleted APIService is put back.
func keepRegistered(ctx context.Context, c *kubeclient.Client, log *zap.Logger, want APIService) {
	wait := time.Second
	for {
		created, err := register(ctx, c, want)
		next := 5 * time.Minute
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("registering the APIService failed: the server needs create, get and update on apiservices.apiregistration.k8s.io (deploy/self-registration.yaml)",
				zap.String("apiservice", want.Metadata.Name), zap.Error(err))
			next, wait = wait, min(2*wait, 30*time.Second)
		case err == nil:
			log.Info("APIService registered", zap.String("apiservice", want.Metadata.Name), zap.Bool("created", created),
				zap.String("service", want.Spec.Service.Namespace+"/"+want.Spec.Service.Name))
			wait = time.Second
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
