package annex

import "github.com/annexapi/annex/version"

// VersionInfo is the /version document (package version).
type VersionInfo = version.Info

// KubernetesVersion is the Kubernetes release whose API conventions annex
// serves (version.Kubernetes).
const KubernetesVersion = version.Kubernetes
