// This file holds YAML responses: a request that accepts application/yaml
// gets the JSON answer (object, list or Status) converted to YAML once, as
// kube-apiserver's YAML serializer gives it.

package rest

import (
	"bytes"
	"net/http"

	"go.yaml.in/yaml/v3"
)

// yamlWriter buffers a JSON response and writes it as YAML on flush.
type yamlWriter struct {
	http.ResponseWriter
	h    *handler
	gzip bool // the client accepts gzip (see startBody)
	code int
	buf  bytes.Buffer
}

func (y *yamlWriter) WriteHeader(code int) { y.code = code }

func (y *yamlWriter) Write(b []byte) (int, error) { return y.buf.Write(b) }

// flush converts the buffered JSON and writes it; a body that is not JSON
// goes out as it is.
func (y *yamlWriter) flush() {
	out := y.buf.Bytes()
	h := y.ResponseWriter.Header()
	if b, err := jsonToYAML(out); err == nil {
		out = b
		h.Set("Content-Type", mediaYAML)
	}
	if y.code == 0 {
		y.code = http.StatusOK
	}
	body, done := y.h.startBody(y.ResponseWriter, y.gzip, y.code, len(out))
	_, _ = body.Write(out)
	done()
}

// jsonToYAML converts a JSON document to block-style YAML, keys in their
// JSON order, strings quoted only where YAML would read them otherwise.
func jsonToYAML(data []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, err
	}
	plain(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// plain clears the flow and quoting styles JSON parsing gives every node.
func plain(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}
