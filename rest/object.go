// This file holds the generic-JSON helpers of the write path: decoding a
// request body once, reading and editing metadata, and extracting selectable
// fields.

package rest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/annexapi/annex/meta"
)

// readBody reads a write request's body after checking its Content-Type.
func readBody(r *http.Request) ([]byte, *meta.Status) {
	if !readableBody(r.Header.Get("Content-Type")) {
		return nil, errUnsupportedBody()
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, StatusForError(err, ErrorContext{})
	}
	return body, nil
}

// decodeObject decodes body into an Object; numbers stay json.Number so that
// integers survive unchanged. A body that is not one JSON object fails with
// 400, worded as k8s's decoder for an unrecognized object.
func (rh *resourceHandler) decodeObject(body []byte) (Object, *meta.Status) {
	rh.h.jsonPass(1)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj Object
	err := dec.Decode(&obj)
	if err == nil && dec.More() {
		err = fmt.Errorf("unexpected data after the object")
	}
	if err == nil && obj == nil {
		err = fmt.Errorf("the object is null")
	}
	if err == nil {
		if md, ok := obj["metadata"]; ok && md != nil {
			if _, ok := md.(map[string]any); !ok {
				err = fmt.Errorf("metadata must be an object")
			}
		}
	}
	if err != nil {
		return nil, meta.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)",
			rh.Kind, err, summarizeData(body, 30)))
	}
	return obj, nil
}

// summarizeData abbreviates a body for an error message as k8s does.
func summarizeData(data []byte, maxLength int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLength {
			return hex.EncodeToString(data[:maxLength]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}

// metadata returns obj's metadata map, creating it when absent.
func metadata(obj Object) Object {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	return md
}

// str returns m[k] when it is a string.
func str(m Object, k string) string {
	s, _ := m[k].(string)
	return s
}

// generation returns metadata.generation as an int64 (0 when absent).
func generation(md Object) int64 {
	switch g := md["generation"].(type) {
	case json.Number:
		n, _ := g.Int64()
		return n
	case float64:
		return int64(g)
	case int64:
		return g
	}
	return 0
}

// addSelectableFields adds to set the value of each field path in data.
func addSelectableFields(set map[string]string, data []byte, fields []string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil {
		return
	}
	for _, f := range fields {
		set[f] = fieldValue(obj, f)
	}
}

// fieldValue is the selector value of a dotted path in obj: a string as is,
// a number or bool in its JSON spelling, anything else or missing "".
func fieldValue(obj map[string]any, path string) string {
	var cur any = obj
	for _, seg := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[seg]
	}
	switch v := cur.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}
