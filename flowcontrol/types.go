// This file holds the flowcontrol.apiserver.k8s.io/v1 API types, with the
// JSON names of k8s.io/api/flowcontrol/v1, and kube's v1 defaulting.

package flowcontrol

import (
	"encoding/json"

	"github.com/annexapi/annex/meta"
)

// GroupVersion is the API version of the configuration objects.
const GroupVersion = "flowcontrol.apiserver.k8s.io/v1"

// Kinds of the configuration objects.
const (
	KindFlowSchema                 = "FlowSchema"
	KindPriorityLevelConfiguration = "PriorityLevelConfiguration"
)

// Names of the mandatory objects and the wildcards, as kube's.
const (
	// NameExempt names the mandatory exempt FlowSchema and priority level.
	NameExempt = "exempt"
	// NameCatchAll names the mandatory catch-all FlowSchema and priority level.
	NameCatchAll = "catch-all"
	// Wildcards of rules and subjects; each applies only as the sole element
	// of its list.
	VerbAll        = "*"
	APIGroupAll    = "*"
	ResourceAll    = "*"
	NonResourceAll = "*"
	NameAll        = "*"
	NamespaceEvery = "*"
)

// The response headers that name the matched objects (by UID, so the names
// administrators chose are not revealed).
const (
	HeaderFlowSchemaUID    = "X-Kubernetes-PF-FlowSchema-UID"
	HeaderPriorityLevelUID = "X-Kubernetes-PF-PriorityLevel-UID"
)

// Enumerations of the API.
const (
	SubjectKindUser           = "User"
	SubjectKindGroup          = "Group"
	SubjectKindServiceAccount = "ServiceAccount"

	DistinguisherByUser      = "ByUser"
	DistinguisherByNamespace = "ByNamespace"

	PriorityLevelExempt  = "Exempt"
	PriorityLevelLimited = "Limited"

	LimitResponseQueue  = "Queue"
	LimitResponseReject = "Reject"
)

// Kube's v1 defaults (pkg/apis/flowcontrol/v1/defaults.go).
const (
	DefaultMatchingPrecedence       = 1000
	DefaultNominalConcurrencyShares = 30
	DefaultQueues                   = 64
	DefaultHandSize                 = 8
	DefaultQueueLengthLimit         = 50
	// MaxMatchingPrecedence is the largest matchingPrecedence allowed.
	MaxMatchingPrecedence = 10000
)

// FlowSchema classifies requests into flows and names their priority level.
type FlowSchema struct {
	meta.TypeMeta `json:",inline"`
	Metadata      meta.ObjectMeta  `json:"metadata"`
	Spec          FlowSchemaSpec   `json:"spec"`
	Status        *json.RawMessage `json:"status,omitempty"`
}

// FlowSchemaSpec is the spec of a FlowSchema.
type FlowSchemaSpec struct {
	PriorityLevelConfiguration PriorityLevelConfigurationReference `json:"priorityLevelConfiguration"`
	// MatchingPrecedence orders the schemas, lowest first; 0 means
	// DefaultMatchingPrecedence.
	MatchingPrecedence  int32                     `json:"matchingPrecedence,omitempty"`
	DistinguisherMethod *FlowDistinguisherMethod  `json:"distinguisherMethod,omitempty"`
	Rules               []PolicyRulesWithSubjects `json:"rules,omitempty"`
}

// PriorityLevelConfigurationReference names a priority level.
type PriorityLevelConfigurationReference struct {
	Name string `json:"name"`
}

// FlowDistinguisherMethod says how requests of a schema split into flows.
type FlowDistinguisherMethod struct {
	Type string `json:"type"`
}

// PolicyRulesWithSubjects matches when some subject and some rule match.
type PolicyRulesWithSubjects struct {
	Subjects         []Subject               `json:"subjects"`
	ResourceRules    []ResourcePolicyRule    `json:"resourceRules,omitempty"`
	NonResourceRules []NonResourcePolicyRule `json:"nonResourceRules,omitempty"`
}

// Subject is a user, a group or a service account.
type Subject struct {
	Kind           string                 `json:"kind"`
	User           *UserSubject           `json:"user,omitempty"`
	Group          *GroupSubject          `json:"group,omitempty"`
	ServiceAccount *ServiceAccountSubject `json:"serviceAccount,omitempty"`
}

// UserSubject matches a user by name ("*" for all).
type UserSubject struct {
	Name string `json:"name"`
}

// GroupSubject matches a group by name ("*" for all).
type GroupSubject struct {
	Name string `json:"name"`
}

// ServiceAccountSubject matches a service account ("*" name for all in the
// namespace).
type ServiceAccountSubject struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ResourcePolicyRule matches resource requests.
type ResourcePolicyRule struct {
	Verbs        []string `json:"verbs"`
	APIGroups    []string `json:"apiGroups"`
	Resources    []string `json:"resources"`
	ClusterScope bool     `json:"clusterScope,omitempty"`
	Namespaces   []string `json:"namespaces"`
}

// NonResourcePolicyRule matches non-resource requests.
type NonResourcePolicyRule struct {
	Verbs           []string `json:"verbs"`
	NonResourceURLs []string `json:"nonResourceURLs"`
}

// PriorityLevelConfiguration is a priority level: exempt, or limited with a
// share of the server's seats.
type PriorityLevelConfiguration struct {
	meta.TypeMeta `json:",inline"`
	Metadata      meta.ObjectMeta                `json:"metadata"`
	Spec          PriorityLevelConfigurationSpec `json:"spec"`
	Status        *json.RawMessage               `json:"status,omitempty"`
}

// PriorityLevelConfigurationSpec is the spec of a priority level.
type PriorityLevelConfigurationSpec struct {
	Type    string                             `json:"type"`
	Limited *LimitedPriorityLevelConfiguration `json:"limited,omitempty"`
	Exempt  *ExemptPriorityLevelConfiguration  `json:"exempt,omitempty"`
}

// LimitedPriorityLevelConfiguration is the configuration of a limited level.
type LimitedPriorityLevelConfiguration struct {
	// NominalConcurrencyShares: nil means DefaultNominalConcurrencyShares.
	NominalConcurrencyShares *int32        `json:"nominalConcurrencyShares,omitempty"`
	LimitResponse            LimitResponse `json:"limitResponse,omitempty"`
	// LendablePercent: nil means 0.
	LendablePercent *int32 `json:"lendablePercent,omitempty"`
	// BorrowingLimitPercent: nil means no limit.
	BorrowingLimitPercent *int32 `json:"borrowingLimitPercent,omitempty"`
}

// ExemptPriorityLevelConfiguration is the configuration of the exempt level.
type ExemptPriorityLevelConfiguration struct {
	NominalConcurrencyShares *int32 `json:"nominalConcurrencyShares,omitempty"`
	LendablePercent          *int32 `json:"lendablePercent,omitempty"`
}

// LimitResponse says what happens to a request that cannot run at once.
type LimitResponse struct {
	Type    string                `json:"type"`
	Queuing *QueuingConfiguration `json:"queuing,omitempty"`
}

// QueuingConfiguration shapes the queues of a level.
type QueuingConfiguration struct {
	Queues           int32 `json:"queues,omitempty"`
	HandSize         int32 `json:"handSize,omitempty"`
	QueueLengthLimit int32 `json:"queueLengthLimit,omitempty"`
}

func ptr32(v int32) *int32 { return &v }

// setDefaults applies kube's v1 defaults to fs in place.
func (fs *FlowSchema) setDefaults() {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = DefaultMatchingPrecedence
	}
}

// setDefaults applies kube's v1 defaults to pl in place.
func (pl *PriorityLevelConfiguration) setDefaults() {
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr32(0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr32(0)
		}
	}
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptr32(DefaultNominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptr32(0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.HandSize == 0 {
				q.HandSize = DefaultHandSize
			}
			if q.Queues == 0 {
				q.Queues = DefaultQueues
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = DefaultQueueLengthLimit
			}
		}
	}
}
