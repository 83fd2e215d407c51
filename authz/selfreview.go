// This file serves SelfSubjectAccessReview (kubectl auth can-i), answered
// by the server's own authorizer, as kube-apiserver does. Behind
// kube-aggregator kubectl asks the cluster; a standalone server answers it
// itself.

package authz

import (
	"net/http"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/review"
	"github.com/annexapi/annex/meta"
)

type selfSubjectAccessReview struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		// authorization.k8s.io/v1's attributes, as SubjectAccessReview's.
		ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty"`
		NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
	} `json:"spec"`
	Status *accessReviewStatus `json:"status,omitempty"`
}

type accessReviewStatus struct {
	Allowed         bool   `json:"allowed"`
	Denied          bool   `json:"denied,omitempty"`
	Reason          string `json:"reason,omitempty"`
	EvaluationError string `json:"evaluationError,omitempty"`
}

// SelfSubjectAccessReviewHandler answers a SelfSubjectAccessReview
// (POST SelfSubjectAccessReviewPath): whether the requesting user (the
// context's filters.User) may do what the review's spec says, asking
// authorizer. It answers 201 with the review and its status, as kube.
func SelfSubjectAccessReviewHandler(authorizer Authorizer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var rv selfSubjectAccessReview
		proto, st := review.Read(r, &rv, "SelfSubjectAccessReview", "authorization.k8s.io/v1")
		if st == nil && proto != nil {
			if err := decodeAccessReviewProto(proto, &rv); err != nil {
				st = meta.NewBadRequest("the body of the request was in an unknown format: " + err.Error())
			}
		}
		if st != nil {
			filters.WriteStatus(w, st)
			return
		}
		user, _ := filters.UserFrom(r.Context())
		a := Attributes{User: user}
		switch spec := rv.Spec; {
		case spec.ResourceAttributes != nil && spec.NonResourceAttributes == nil:
			ra := spec.ResourceAttributes
			a.IsResourceRequest, a.Verb, a.APIGroup, a.APIVersion = true, ra.Verb, ra.Group, ra.Version
			a.Namespace, a.Resource, a.Subresource, a.Name = ra.Namespace, ra.Resource, ra.Subresource, ra.Name
		case spec.NonResourceAttributes != nil && spec.ResourceAttributes == nil:
			a.Verb, a.Path = spec.NonResourceAttributes.Verb, spec.NonResourceAttributes.Path
		default:
			filters.WriteStatus(w, meta.NewInvalid(meta.GroupKind{Group: "authorization.k8s.io", Kind: "SelfSubjectAccessReview"}, "",
				[]meta.StatusCause{{Type: meta.CauseTypeFieldValueInvalid, Field: "spec.resourceAttributes",
					Message: "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"}}))
			return
		}
		d, reason, err := authorizer.Authorize(r.Context(), a)
		status := &accessReviewStatus{Allowed: d == DecisionAllow, Denied: d == DecisionDeny, Reason: reason}
		if err != nil {
			status.EvaluationError = err.Error()
		}
		rv.Status = status
		rv.Kind, rv.APIVersion = "SelfSubjectAccessReview", "authorization.k8s.io/v1"
		if rv.Metadata == nil {
			rv.Metadata = map[string]any{}
		}
		rv.Metadata["creationTimestamp"] = nil
		review.Write(w, rv)
	}
}

// decodeAccessReviewProto reads the spec of a SelfSubjectAccessReview sent
// as Kubernetes protobuf (after the magic): a runtime.Unknown whose field 2 (raw)
// is the review, whose field 2 is the spec (1: resourceAttributes, 2:
// nonResourceAttributes), with the attributes' string fields numbered as in
// k8s.io/api/authorization/v1's generated.proto.
func decodeAccessReviewProto(body []byte, review *selfSubjectAccessReview) error {
	raw, err := protoField(body, 2)
	if err != nil {
		return err
	}
	spec, err := protoField(raw, 2)
	if err != nil {
		return err
	}
	return protoFields(spec, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			ra := &ResourceAttributes{}
			review.Spec.ResourceAttributes = ra
			return protoFields(v, func(n protowire.Number, s []byte) error {
				dst := map[protowire.Number]*string{1: &ra.Namespace, 2: &ra.Verb, 3: &ra.Group, 4: &ra.Version, 5: &ra.Resource, 6: &ra.Subresource, 7: &ra.Name}[n]
				if dst != nil {
					*dst = string(s)
				}
				return nil
			})
		case 2:
			na := &NonResourceAttributes{}
			review.Spec.NonResourceAttributes = na
			return protoFields(v, func(n protowire.Number, s []byte) error {
				switch n {
				case 1:
					na.Path = string(s)
				case 2:
					na.Verb = string(s)
				}
				return nil
			})
		}
		return nil
	})
}

// protoField returns the bytes of the last length-delimited field num of
// msg (empty when absent).
func protoField(msg []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	err := protoFields(msg, func(n protowire.Number, v []byte) error {
		if n == num {
			out = v
		}
		return nil
	})
	return out, err
}

// protoFields calls f with each length-delimited field of msg and skips the
// others.
func protoFields(msg []byte, f func(protowire.Number, []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return protowire.ParseError(n)
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}
