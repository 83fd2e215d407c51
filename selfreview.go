// This file serves the two reviews a user asks about themself, as
// kube-apiserver does: SelfSubjectAccessReview (kubectl auth can-i),
// answered by the server's own authorizer, and SelfSubjectReview (kubectl
// auth whoami). Behind kube-aggregator kubectl asks the cluster; a
// standalone server answers them itself.

package annex

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// The paths of the reviews (authorization.k8s.io/v1, authentication.k8s.io/v1).
const (
	selfSubjectAccessReviewPath = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	selfSubjectReviewPath       = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
)

// maxReviewBody bounds a review's body: it is a few hundred bytes.
const maxReviewBody = 64 << 10

type selfSubjectAccessReview struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		// authorization.k8s.io/v1's attributes, as SubjectAccessReview's.
		ResourceAttributes    *authz.ResourceAttributes    `json:"resourceAttributes,omitempty"`
		NonResourceAttributes *authz.NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
	} `json:"spec"`
	Status *accessReviewStatus `json:"status,omitempty"`
}

type accessReviewStatus struct {
	Allowed         bool   `json:"allowed"`
	Denied          bool   `json:"denied,omitempty"`
	Reason          string `json:"reason,omitempty"`
	EvaluationError string `json:"evaluationError,omitempty"`
}

// selfSubjectAccessReview answers whether the requesting user may do what
// the review's spec says, asking the server's authorizer.
func selfSubjectAccessReviewHandler(authorizer authz.Authorizer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var review selfSubjectAccessReview
		if st := decodeReview(r, &review, "SelfSubjectAccessReview", "authorization.k8s.io/v1"); st != nil {
			filters.WriteStatus(w, st)
			return
		}
		user, _ := filters.UserFrom(r.Context())
		a := authz.Attributes{User: user}
		switch spec := review.Spec; {
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
		st := &accessReviewStatus{Allowed: d == authz.DecisionAllow, Denied: d == authz.DecisionDeny, Reason: reason}
		if err != nil {
			st.EvaluationError = err.Error()
		}
		review.Status = st
		review.Kind, review.APIVersion = "SelfSubjectAccessReview", "authorization.k8s.io/v1"
		if review.Metadata == nil {
			review.Metadata = map[string]any{}
		}
		review.Metadata["creationTimestamp"] = nil
		writeReview(w, review)
	}
}

// selfSubjectReview answers who the requesting user is.
func selfSubjectReviewHandler(w http.ResponseWriter, r *http.Request) {
	var review struct {
		Kind       string         `json:"kind"`
		APIVersion string         `json:"apiVersion"`
		Metadata   map[string]any `json:"metadata"`
	}
	if st := decodeReview(r, &review, "SelfSubjectReview", "authentication.k8s.io/v1"); st != nil {
		filters.WriteStatus(w, st)
		return
	}
	user, _ := filters.UserFrom(r.Context())
	info := map[string]any{}
	if user != nil {
		info["username"] = user.Name
		if user.UID != "" {
			info["uid"] = user.UID
		}
		if len(user.Groups) > 0 {
			info["groups"] = user.Groups
		}
		if len(user.Extra) > 0 {
			info["extra"] = user.Extra
		}
	}
	writeReview(w, map[string]any{"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
		"metadata": map[string]any{"creationTimestamp": nil}, "status": map[string]any{"userInfo": info}})
}

// decodeReview reads a review's body into v, checking its kind and
// apiVersion as the API server's decoder does.
func decodeReview(r *http.Request, v any, kind, apiVersion string) *meta.Status {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBody+1))
	if err != nil {
		return meta.NewBadRequest(err.Error())
	}
	if len(body) > maxReviewBody {
		return meta.NewRequestEntityTooLarge("the review is too large")
	}
	mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	switch strings.TrimSpace(mt) {
	case "", "application/json":
	case mediaProtobuf:
		// kubectl's typed clients send Kubernetes' protobuf.
		ssar, ok := v.(*selfSubjectAccessReview)
		if !ok { // a SelfSubjectReview carries nothing to read
			return nil
		}
		if err := decodeAccessReviewProto(body, ssar); err != nil {
			return meta.NewBadRequest("the body of the request was in an unknown format: " + err.Error())
		}
		return nil
	default:
		return meta.NewUnsupportedMediaType([]string{"application/json", mediaProtobuf})
	}
	if err := json.Unmarshal(body, v); err != nil {
		return meta.NewBadRequest("the body of the request was in an unknown format: " + err.Error())
	}
	var tm struct{ Kind, APIVersion string }
	_ = json.Unmarshal(body, &tm)
	if (tm.Kind != "" && tm.Kind != kind) || (tm.APIVersion != "" && !strings.EqualFold(tm.APIVersion, apiVersion)) {
		return meta.NewBadRequest("the API version in the data (" + tm.APIVersion + ") does not match the expected API version (" + apiVersion + ")")
	}
	return nil
}

func writeReview(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		filters.WriteStatus(w, meta.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(append(b, '\n'))
}

// mediaProtobuf is Kubernetes' protobuf media type.
const mediaProtobuf = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte("k8s\x00")

// decodeAccessReviewProto reads the spec of a SelfSubjectAccessReview sent
// as Kubernetes protobuf: the magic, a runtime.Unknown whose field 2 (raw)
// is the review, whose field 2 is the spec (1: resourceAttributes, 2:
// nonResourceAttributes), with the attributes' string fields numbered as in
// k8s.io/api/authorization/v1's generated.proto.
func decodeAccessReviewProto(body []byte, review *selfSubjectAccessReview) error {
	if !bytes.HasPrefix(body, protobufMagic) {
		return errors.New("not a Kubernetes protobuf message")
	}
	raw, err := protoField(body[len(protobufMagic):], 2)
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
			ra := &authz.ResourceAttributes{}
			review.Spec.ResourceAttributes = ra
			return protoFields(v, func(n protowire.Number, s []byte) error {
				dst := map[protowire.Number]*string{1: &ra.Namespace, 2: &ra.Verb, 3: &ra.Group, 4: &ra.Version, 5: &ra.Resource, 6: &ra.Subresource, 7: &ra.Name}[n]
				if dst != nil {
					*dst = string(s)
				}
				return nil
			})
		case 2:
			na := &authz.NonResourceAttributes{}
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
