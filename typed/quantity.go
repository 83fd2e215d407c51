package typed

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/annexapi/annex/schema"
)

// Quantity is a Kubernetes resource quantity ("250m", "1Gi", 2), kept in
// its string form. Its schema is what CRD generators write for k8s.io's
// resource.Quantity: an integer or a string matching the quantity pattern
// (x-kubernetes-int-or-string), so clients may send either.
type Quantity string

// quantityPattern is the pattern kube's CRD generators give a quantity.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

func quantitySchema() *schema.Props {
	return &schema.Props{XIntOrString: true, Pattern: quantityPattern,
		AnyOf: []schema.Props{{Type: "integer"}, {Type: "string"}}}
}

// UnmarshalJSON takes a quantity as a string or a number.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*q = Quantity(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a quantity is a string or a number: %w", err)
	}
	*q = Quantity(n.String())
	return nil
}
