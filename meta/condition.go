// This file holds Condition, the status condition objects embed.

package meta

// Condition is metav1.Condition: one aspect of an object's state, kept in
// status.conditions. The annex tags are the validation kube's CRD
// generators write for it, which package typed turns into the schema
// (kube's own OpenAPI has the same fields and required list, without the
// bounds).
type Condition struct {
	// Type is the condition's type in CamelCase or foo.example.com/CamelCase.
	Type string `json:"type" annex:"maxLength=316,pattern='^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$'" doc:"type of condition in CamelCase or in foo.example.com/CamelCase."`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status" annex:"enum=True|False|Unknown" doc:"status of the condition, one of True, False, Unknown."`
	// ObservedGeneration is the metadata.generation the condition was set for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty" annex:"minimum=0" doc:"observedGeneration represents the .metadata.generation that the condition was set based upon."`
	// LastTransitionTime is when the status last changed.
	LastTransitionTime Time `json:"lastTransitionTime" doc:"lastTransitionTime is the last time the condition transitioned from one status to another."`
	// Reason is a CamelCase reason for the last transition.
	Reason string `json:"reason" annex:"minLength=1,maxLength=1024,pattern='^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'" doc:"reason contains a programmatic identifier indicating the reason for the condition's last transition."`
	// Message is for people.
	Message string `json:"message" annex:"maxLength=32768" doc:"message is a human readable message indicating details about the transition."`
}

// ConditionStatus is a condition's status: True, False or Unknown.
type ConditionStatus string

// The condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)
