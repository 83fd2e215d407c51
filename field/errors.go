package field

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/annexapi/annex/meta"
)

// ErrorType is the kind of a field error; its values are the Status causes'
// types (meta.CauseType...).
type ErrorType string

// The error types, as kube names them.
const (
	ErrorTypeNotFound     ErrorType = "FieldValueNotFound"
	ErrorTypeRequired     ErrorType = "FieldValueRequired"
	ErrorTypeDuplicate    ErrorType = "FieldValueDuplicate"
	ErrorTypeInvalid      ErrorType = "FieldValueInvalid"
	ErrorTypeNotSupported ErrorType = "FieldValueNotSupported"
	ErrorTypeForbidden    ErrorType = "FieldValueForbidden"
	ErrorTypeTooLong      ErrorType = "FieldValueTooLong"
	ErrorTypeTooMany      ErrorType = "FieldValueTooMany"
	ErrorTypeInternal     ErrorType = "InternalError"
	ErrorTypeTypeInvalid  ErrorType = "FieldValueTypeInvalid"
)

// String is the type's words in a message ("Invalid value", "Required
// value", ...).
func (t ErrorType) String() string {
	switch t {
	case ErrorTypeNotFound:
		return "Not found"
	case ErrorTypeRequired:
		return "Required value"
	case ErrorTypeDuplicate:
		return "Duplicate value"
	case ErrorTypeInvalid, ErrorTypeTypeInvalid:
		return "Invalid value"
	case ErrorTypeNotSupported:
		return "Unsupported value"
	case ErrorTypeForbidden:
		return "Forbidden"
	case ErrorTypeTooLong:
		return "Too long"
	case ErrorTypeTooMany:
		return "Too many"
	case ErrorTypeInternal:
		return "Internal error"
	}
	return string(t)
}

// Error is one problem with one field.
type Error struct {
	Type     ErrorType
	Field    string // the field's path, as Path.String prints it
	BadValue any    // the offending value, when the type shows one
	Detail   string
}

// omitted is a BadValue that is not printed.
type omitted struct{}

// Error is "<field>: <body>", as kube prints a field error.
func (e *Error) Error() string { return e.Field + ": " + e.ErrorBody() }

// ErrorBody is the error without its field: the type's words, the value
// (for the types that show one) and the detail, e.g.
// `Invalid value: -1: must be greater than or equal to 0`.
func (e *Error) ErrorBody() string {
	var s string
	switch {
	case e.Type == ErrorTypeRequired, e.Type == ErrorTypeForbidden, e.Type == ErrorTypeTooLong, e.Type == ErrorTypeInternal:
		s = e.Type.String()
	case e.BadValue == omitted{}:
		s = e.Type.String()
	default:
		s = e.Type.String() + ": " + formatValue(e.BadValue)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// formatValue prints a bad value as kube does: nil (or a nil pointer) as
// "null", a pointer as what it points to, simple types plainly, strings
// quoted, a fmt.Stringer by its String, anything else with %#v.
func formatValue(v any) string {
	if v == nil {
		return `"null"`
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return `"null"`
		}
		v = rv.Elem().Interface()
	}
	switch t := v.(type) {
	case int64, int32, float64, float32, bool:
		return fmt.Sprintf("%v", t)
	case string:
		return strconv.Quote(t)
	case fmt.Stringer:
		return t.String()
	}
	return fmt.Sprintf("%#v", v)
}

// ErrorList is a list of field errors; nil or empty means valid.
type ErrorList []*Error

// Causes are the errors as the causes of a Status: type, message (the
// error's body) and field.
func (l ErrorList) Causes() []meta.StatusCause {
	if len(l) == 0 {
		return nil
	}
	out := make([]meta.StatusCause, len(l))
	for i, e := range l {
		out[i] = meta.StatusCause{Type: meta.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field}
	}
	return out
}

// Status is the 422 Invalid Status kube-apiserver answers for these errors
// on the object name of kind gk; nil for an empty list.
func (l ErrorList) Status(gk meta.GroupKind, name string) *meta.Status {
	if len(l) == 0 {
		return nil
	}
	return meta.NewInvalid(gk, name, l.Causes())
}

// Error joins the errors as kube's aggregate prints them: one alone, or
// "[e1, e2]".
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return ""
	case 1:
		return l[0].Error()
	}
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// Invalid: the value is malformed or out of range; detail says why.
func Invalid(p *Path, value any, detail string) *Error {
	return &Error{Type: ErrorTypeInvalid, Field: p.String(), BadValue: value, Detail: detail}
}

// TypeInvalid: the value has the wrong type.
func TypeInvalid(p *Path, value any, detail string) *Error {
	return &Error{Type: ErrorTypeTypeInvalid, Field: p.String(), BadValue: value, Detail: detail}
}

// Required: the field is missing or empty.
func Required(p *Path, detail string) *Error {
	return &Error{Type: ErrorTypeRequired, Field: p.String(), BadValue: "", Detail: detail}
}

// NotFound: the value names something that does not exist.
func NotFound(p *Path, value any) *Error {
	return &Error{Type: ErrorTypeNotFound, Field: p.String(), BadValue: value}
}

// Duplicate: the value appears more than once where it must be unique.
func Duplicate(p *Path, value any) *Error {
	return &Error{Type: ErrorTypeDuplicate, Field: p.String(), BadValue: value}
}

// NotSupported: the value is not one of valid (listed, quoted, in the
// detail).
func NotSupported[T ~string](p *Path, value any, valid []T) *Error {
	detail := ""
	if len(valid) > 0 {
		quoted := make([]string, len(valid))
		for i, v := range valid {
			quoted[i] = strconv.Quote(string(v))
		}
		detail = "supported values: " + strings.Join(quoted, ", ")
	}
	return &Error{Type: ErrorTypeNotSupported, Field: p.String(), BadValue: value, Detail: detail}
}

// Forbidden: the field may not be set here, or not to this; detail says why.
func Forbidden(p *Path, detail string) *Error {
	return &Error{Type: ErrorTypeForbidden, Field: p.String(), BadValue: "", Detail: detail}
}

// TooLong: the value is longer than maxLength bytes (the value is not
// printed); a negative maxLength means unknown.
func TooLong(p *Path, value any, maxLength int) *Error {
	msg := "value is too long"
	if maxLength >= 0 {
		msg = fmt.Sprintf("may not be more than %d bytes", maxLength)
	}
	return &Error{Type: ErrorTypeTooLong, Field: p.String(), BadValue: "<value omitted>", Detail: msg}
}

// TooMany: the list has actual items, more than max (either negative:
// unknown).
func TooMany(p *Path, actual, max int) *Error {
	msg := "has too many items"
	if max >= 0 {
		msg = fmt.Sprintf("must have at most %d items", max)
	}
	var v any = omitted{}
	if actual >= 0 {
		v = actual
	}
	return &Error{Type: ErrorTypeTooMany, Field: p.String(), BadValue: v, Detail: msg}
}

// InternalError: validating the field failed for a reason of the server's.
func InternalError(p *Path, err error) *Error {
	return &Error{Type: ErrorTypeInternal, Field: p.String(), Detail: err.Error()}
}
