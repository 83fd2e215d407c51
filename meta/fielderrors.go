// This file renders field errors as k8s.io/apimachinery release-1.32 does
// (pkg/util/validation/field: Error.Error and Error.ErrorBody), as
// StatusCauses for NewInvalid and as text for selector errors.

package meta

import (
	"fmt"
	"strings"
)

// fieldError is one validation failure: its cause type, the field path, and
// the body ("Invalid value: \"x\": detail"), which is what a StatusCause's
// Message holds.
type fieldError struct {
	typ   CauseType
	field string
	body  string
}

func (e fieldError) Error() string { return e.field + ": " + e.body }

func (e fieldError) cause() StatusCause {
	return StatusCause{Type: e.typ, Message: e.body, Field: e.field}
}

// formatBadValue prints a bad value as ErrorBody does: numbers and bools
// with %v, strings quoted, nil pointers as null, anything else with %#v.
func formatBadValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case *int64:
		if t == nil {
			return "null"
		}
		return fmt.Sprint(*t)
	case *string:
		if t == nil {
			return "null"
		}
		return fmt.Sprintf("%q", *t)
	case int64, int32, float64, float32, bool:
		return fmt.Sprint(t)
	case string:
		return fmt.Sprintf("%q", t)
	case fmt.Stringer:
		return t.String()
	default:
		return fmt.Sprintf("%#v", t)
	}
}

func withDetail(s, detail string) string {
	if detail != "" {
		return s + ": " + detail
	}
	return s
}

func invalidErr(field string, value any, detail string) fieldError {
	return fieldError{CauseTypeFieldValueInvalid, field, withDetail("Invalid value: "+formatBadValue(value), detail)}
}

func requiredErr(field, detail string) fieldError {
	return fieldError{CauseTypeFieldValueRequired, field, withDetail("Required value", detail)}
}

func forbiddenErr(field, detail string) fieldError {
	return fieldError{CauseTypeFieldValueForbidden, field, withDetail("Forbidden", detail)}
}

func tooLongErr(field string, maxLength int) fieldError {
	return fieldError{CauseTypeFieldValueTooLong, field, fmt.Sprintf("Too long: may not be more than %d bytes", maxLength)}
}

// aggregate joins errors as utilerrors.NewAggregate does: one error alone,
// several deduplicated inside brackets.
func aggregate(errs []fieldError) string {
	var msgs []string
	seen := make(map[string]bool, len(errs))
	for _, e := range errs {
		m := e.Error()
		if !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

func causes(errs []fieldError) []StatusCause {
	if len(errs) == 0 {
		return nil
	}
	out := make([]StatusCause, len(errs))
	for i, e := range errs {
		out[i] = e.cause()
	}
	return out
}
