// This file holds kube's mandatory and suggested configuration
// (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go, kube 1.34 and
// later, where endpoint-controller and workload-leader-election are gone),
// written as our own values, and the stable UIDs of objects that come
// without one.

package flowcontrol

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/annexapi/annex/meta"
)

// The well-known users and groups the defaults name.
const (
	groupMasters         = "system:masters"
	groupAuthenticated   = "system:authenticated"
	groupUnauthenticated = "system:unauthenticated"
	groupNodes           = "system:nodes"
	groupServiceAccounts = "system:serviceaccounts"
	userControllerMgr    = "system:kube-controller-manager"
	userScheduler        = "system:kube-scheduler"
	autoUpdateAnnotation = "apf.kubernetes.io/autoupdate-spec"
)

// StableUID returns the UID annex gives a configuration object of kind and
// name that has none (the defaults, and file objects without metadata.uid):
// a UUID-shaped digest of both, the same in every process and release, so
// the X-Kubernetes-PF-* headers can be compared across replicas.
func StableUID(kind, name string) string {
	sum := sha256.Sum256([]byte("annex.flowcontrol/" + kind + "/" + name))
	sum[6] = sum[6]&0x0f | 0x50 // version 5 shape
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func newPL(name string, spec PriorityLevelConfigurationSpec) PriorityLevelConfiguration {
	return PriorityLevelConfiguration{
		TypeMeta: meta.TypeMeta{Kind: KindPriorityLevelConfiguration, APIVersion: GroupVersion},
		Metadata: meta.ObjectMeta{Name: name, UID: StableUID(KindPriorityLevelConfiguration, name),
			Annotations: map[string]string{autoUpdateAnnotation: "true"}},
		Spec: spec,
	}
}

func limitedPL(name string, shares, lendable int32, queues, handSize int32) PriorityLevelConfiguration {
	return newPL(name, PriorityLevelConfigurationSpec{
		Type: PriorityLevelLimited,
		Limited: &LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr32(shares),
			LendablePercent:          ptr32(lendable),
			LimitResponse: LimitResponse{Type: LimitResponseQueue, Queuing: &QueuingConfiguration{
				Queues: queues, HandSize: handSize, QueueLengthLimit: 50,
			}},
		},
	})
}

func newFS(name, level string, precedence int32, distinguisher string, rules ...PolicyRulesWithSubjects) FlowSchema {
	fs := FlowSchema{
		TypeMeta: meta.TypeMeta{Kind: KindFlowSchema, APIVersion: GroupVersion},
		Metadata: meta.ObjectMeta{Name: name, UID: StableUID(KindFlowSchema, name),
			Annotations: map[string]string{autoUpdateAnnotation: "true"}},
		Spec: FlowSchemaSpec{
			PriorityLevelConfiguration: PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			Rules:                      rules,
		},
	}
	if distinguisher != "" {
		fs.Spec.DistinguisherMethod = &FlowDistinguisherMethod{Type: distinguisher}
	}
	return fs
}

func groups(names ...string) []Subject {
	out := make([]Subject, len(names))
	for i, n := range names {
		out[i] = Subject{Kind: SubjectKindGroup, Group: &GroupSubject{Name: n}}
	}
	return out
}

func users(names ...string) []Subject {
	out := make([]Subject, len(names))
	for i, n := range names {
		out[i] = Subject{Kind: SubjectKindUser, User: &UserSubject{Name: n}}
	}
	return out
}

func kubeSystemServiceAccounts() []Subject {
	return []Subject{{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: "kube-system", Name: NameAll}}}
}

// everything is a rule set that matches every request of the subjects.
func everything(subjects []Subject) PolicyRulesWithSubjects {
	return PolicyRulesWithSubjects{
		Subjects: subjects,
		ResourceRules: []ResourcePolicyRule{{
			Verbs: []string{VerbAll}, APIGroups: []string{APIGroupAll}, Resources: []string{ResourceAll},
			Namespaces: []string{NamespaceEvery}, ClusterScope: true,
		}},
		NonResourceRules: []NonResourcePolicyRule{{Verbs: []string{VerbAll}, NonResourceURLs: []string{NonResourceAll}}},
	}
}

// MandatoryPriorityLevels returns fresh copies of kube's mandatory priority
// levels: exempt and catch-all.
func MandatoryPriorityLevels() []PriorityLevelConfiguration {
	return []PriorityLevelConfiguration{
		newPL(NameCatchAll, PriorityLevelConfigurationSpec{
			Type: PriorityLevelLimited,
			Limited: &LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr32(5),
				LendablePercent:          ptr32(0),
				LimitResponse:            LimitResponse{Type: LimitResponseReject},
			},
		}),
		newPL(NameExempt, PriorityLevelConfigurationSpec{
			Type:   PriorityLevelExempt,
			Exempt: &ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr32(0), LendablePercent: ptr32(0)},
		}),
	}
}

// MandatoryFlowSchemas returns fresh copies of kube's mandatory FlowSchemas:
// exempt (group system:masters, precedence 1) and catch-all (every
// authenticated or unauthenticated request, precedence 10000, ByUser).
func MandatoryFlowSchemas() []FlowSchema {
	return []FlowSchema{
		newFS(NameExempt, NameExempt, 1, "", everything(groups(groupMasters))),
		newFS(NameCatchAll, NameCatchAll, 10000, DistinguisherByUser, everything(groups(groupUnauthenticated, groupAuthenticated))),
	}
}

// SuggestedPriorityLevels returns fresh copies of kube's suggested priority
// levels: system, node-high, leader-election, workload-high, workload-low and
// global-default.
func SuggestedPriorityLevels() []PriorityLevelConfiguration {
	return []PriorityLevelConfiguration{
		limitedPL("system", 30, 33, 64, 6),
		limitedPL("node-high", 40, 25, 64, 6),
		limitedPL("leader-election", 10, 0, 16, 4),
		limitedPL("workload-high", 40, 50, 128, 6),
		limitedPL("workload-low", 100, 90, 128, 6),
		limitedPL("global-default", 20, 50, 128, 6),
	}
}

// SuggestedFlowSchemas returns fresh copies of kube's suggested FlowSchemas:
// system-nodes, system-node-high, probes, system-leader-election,
// kube-controller-manager, kube-scheduler, kube-system-service-accounts,
// service-accounts and global-default.
func SuggestedFlowSchemas() []FlowSchema {
	leases := ResourcePolicyRule{Verbs: []string{VerbAll}, APIGroups: []string{"coordination.k8s.io"},
		Resources: []string{"leases"}, Namespaces: []string{NamespaceEvery}}
	electionLeases := ResourcePolicyRule{Verbs: []string{"get", "create", "update"}, APIGroups: []string{"coordination.k8s.io"},
		Resources: []string{"leases"}, Namespaces: []string{NamespaceEvery}}
	return []FlowSchema{
		newFS("system-nodes", "system", 500, DistinguisherByUser, everything(groups(groupNodes))),
		newFS("system-node-high", "node-high", 400, DistinguisherByUser, PolicyRulesWithSubjects{
			Subjects: groups(groupNodes),
			ResourceRules: []ResourcePolicyRule{
				{Verbs: []string{VerbAll}, APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"},
					Namespaces: []string{NamespaceEvery}, ClusterScope: true},
				leases,
			},
		}),
		newFS("probes", NameExempt, 2, "", PolicyRulesWithSubjects{
			Subjects:         groups(groupUnauthenticated, groupAuthenticated),
			NonResourceRules: []NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}}},
		}),
		newFS("system-leader-election", "leader-election", 100, DistinguisherByUser, PolicyRulesWithSubjects{
			Subjects:      append(users(userControllerMgr, userScheduler), kubeSystemServiceAccounts()...),
			ResourceRules: []ResourcePolicyRule{electionLeases},
		}),
		newFS("kube-controller-manager", "workload-high", 800, DistinguisherByNamespace, everything(users(userControllerMgr))),
		newFS("kube-scheduler", "workload-high", 800, DistinguisherByNamespace, everything(users(userScheduler))),
		newFS("kube-system-service-accounts", "workload-high", 900, DistinguisherByNamespace, everything(kubeSystemServiceAccounts())),
		newFS("service-accounts", "workload-low", 9000, DistinguisherByUser, everything(groups(groupServiceAccounts))),
		newFS("global-default", "global-default", 9900, DistinguisherByUser, everything(groups(groupUnauthenticated, groupAuthenticated))),
	}
}
