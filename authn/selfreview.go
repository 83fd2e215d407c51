// This file serves SelfSubjectReview (kubectl auth whoami), as
// kube-apiserver does: who the requesting user is.

package authn

import (
	"net/http"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/review"
)

// SelfSubjectReviewPath is where SelfSubjectReviews are created.
const SelfSubjectReviewPath = "/apis/authentication.k8s.io/v1/selfsubjectreviews"

// SelfSubjectReviewHandler answers a SelfSubjectReview (POST
// SelfSubjectReviewPath) with the requesting user, the context's
// filters.User, answered 201 as kube does.
func SelfSubjectReviewHandler(w http.ResponseWriter, r *http.Request) {
	var rv struct {
		Kind       string         `json:"kind"`
		APIVersion string         `json:"apiVersion"`
		Metadata   map[string]any `json:"metadata"`
	}
	// A protobuf review carries nothing to read.
	if _, st := review.Read(r, &rv, "SelfSubjectReview", "authentication.k8s.io/v1"); st != nil {
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
	review.Write(w, map[string]any{"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
		"metadata": map[string]any{"creationTimestamp": nil}, "status": map[string]any{"userInfo": info}})
}
