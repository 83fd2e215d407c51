// This file holds the one writer of Status responses, so every stage answers
// errors with the same headers and body.

package filters

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/annexapi/annex/meta"
)

// WriteStatus writes s as a JSON Status response with s.Code as the HTTP
// status (500 when unset). A retryAfterSeconds in the details also sets the
// Retry-After header, which client-go needs before it retries.
func WriteStatus(w http.ResponseWriter, s *meta.Status) {
	code := int(s.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	body, err := json.Marshal(s)
	if err != nil {
		// A Status has only strings and numbers; this cannot happen.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 && h.Get("Retry-After") == "" {
		h.Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
