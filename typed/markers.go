// This file parses the struct tags that add to a derived schema: annex
// markers (`annex:"minimum=1,pattern='^(a|b){1,3}$'"`) and CEL rules
// (`cel:"rule='self.size() > 0',message='must not be empty'"`). Both are
// comma-separated items, key or key=value, where a value may be quoted in
// single quotes to hold commas; \' is a quote inside a quoted value.

package typed

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/annexapi/annex/schema"
)

// item is one key or key=value of a tag.
type item struct {
	key, value string
	hasValue   bool
	quoted     bool
	// raw is the item as written, for error messages; text is raw with
	// the spaces around it (what a comma in a value split off).
	raw, text string
}

// splitItems splits a tag into its items. tag names the tag in errors.
func splitItems(tag, s string) ([]item, error) {
	var out []item
	i := 0
	for {
		lead := i
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ',' {
			i++
		}
		it := item{key: strings.TrimSpace(s[start:i])}
		if i < len(s) && s[i] == '=' {
			it.hasValue = true
			i++
			if i < len(s) && s[i] == '\'' {
				v, end, ok := unquote(s, i)
				if !ok {
					return nil, fmt.Errorf("%s marker %s: the quoted value has no closing quote; write %s='...', with \\' for a quote inside", tag, it.key, it.key)
				}
				it.value, it.quoted = v, true
				i = end
				for i < len(s) && s[i] == ' ' {
					i++
				}
				if i < len(s) && s[i] != ',' {
					return nil, fmt.Errorf("%s marker %s: %q follows the closing quote; end the value with ' and separate markers with commas, with \\' for a quote inside", tag, it.key, s[i:])
				}
			} else {
				vs := i
				for i < len(s) && s[i] != ',' {
					i++
				}
				it.value = strings.TrimSpace(s[vs:i])
			}
		}
		it.raw, it.text = strings.TrimSpace(s[start:i]), s[lead:i]
		if it.key == "" {
			return nil, fmt.Errorf("%s tag %q: an empty marker; separate markers with single commas", tag, s)
		}
		out = append(out, it)
		if i < len(s) {
			i++ // the comma
		}
	}
}

// unquote reads the single-quoted value starting at s[i] (a quote): \' is a
// quote, any other character (a backslash included) stands for itself. It
// returns the value and the index past the closing quote.
func unquote(s string, i int) (string, int, bool) {
	var b strings.Builder
	for i++; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case s[i] == '\'':
			return b.String(), i + 1, true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, false
}

// quoteValue writes v as a quoted marker value.
func quoteValue(v string) string { return "'" + strings.ReplaceAll(v, "'", `\'`) + "'" }

// unknownItem is the error for an item whose key is not a marker. When the
// item before it had an unquoted value, the comma most likely belonged to
// that value: the error shows it quoted, with the items up to the next
// known key.
func unknownItem(tag string, items []item, i int, known func(string) bool, list string) error {
	it := items[i]
	if i > 0 && items[i-1].hasValue && !items[i-1].quoted {
		prev := items[i-1]
		parts := []string{prev.value}
		for _, next := range items[i:] {
			if known(next.key) {
				break
			}
			parts = append(parts, next.text)
		}
		return fmt.Errorf("%s marker %q is unknown; a value with a comma must be quoted: %s=%s", tag, it.raw, prev.key, quoteValue(strings.Join(parts, ",")))
	}
	return fmt.Errorf("%s marker %q is unknown; the markers are %s", tag, it.raw, list)
}

// flagMarkers take no value.
var flagMarkers = map[string]bool{"required": true, "optional": true, "nullable": true, "preserveUnknownFields": true}

// valueMarkers take one.
var valueMarkers = map[string]bool{"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "minLength": true, "maxLength": true, "minItems": true, "maxItems": true,
	"minProperties": true, "maxProperties": true, "pattern": true, "format": true, "enum": true, "default": true,
	"listType": true, "listMapKeys": true, "mapType": true}

const markerList = "required, optional, nullable, preserveUnknownFields, minimum=, maximum=, exclusiveMinimum=true, " +
	"exclusiveMaximum=true, multipleOf=, minLength=, maxLength=, minItems=, maxItems=, minProperties=, maxProperties=, " +
	"pattern=, format=, enum=a|b, default=, listType=atomic|set|map, listMapKeys=a|b, mapType=granular|atomic"

// applyMarkers applies an annex:"..." tag to p; it returns whether the
// field is required after them.
func applyMarkers(p *schema.Props, tag string, required bool) (bool, error) {
	items, err := splitItems("annex", tag)
	if err != nil {
		return required, err
	}
	known := func(k string) bool { return flagMarkers[k] || valueMarkers[k] }
	for i, it := range items {
		k, v := it.key, it.value
		if !known(k) {
			return required, unknownItem("annex", items, i, known, markerList)
		}
		if flagMarkers[k] && it.hasValue {
			return required, fmt.Errorf("annex marker %s takes no value: write %s alone", k, k)
		}
		if valueMarkers[k] && !it.hasValue {
			return required, fmt.Errorf("annex marker %s needs a value: write %s=<value>", k, k)
		}
		num := func() (*float64, error) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("annex marker %s: %q is not a number; write %s=10 or %s=0.5", k, v, k, k)
			}
			return &f, nil
		}
		count := func() (*int64, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("annex marker %s: %q is not a count; write %s=3", k, v, k)
			}
			return &n, nil
		}
		flag := func() (bool, error) {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return false, fmt.Errorf("annex marker %s: %q is not true or false; write %s=true", k, v, k)
			}
			return b, nil
		}
		switch k {
		case "required":
			required = true
		case "optional":
			required = false
		case "nullable":
			p.Nullable = true
		case "preserveUnknownFields":
			yes := true
			p.XPreserveUnknownFields = &yes
		case "minimum":
			p.Minimum, err = num()
		case "maximum":
			p.Maximum, err = num()
		case "exclusiveMinimum":
			p.ExclusiveMinimum, err = flag()
		case "exclusiveMaximum":
			p.ExclusiveMaximum, err = flag()
		case "multipleOf":
			p.MultipleOf, err = num()
		case "minLength":
			p.MinLength, err = count()
		case "maxLength":
			p.MaxLength, err = count()
		case "minItems":
			p.MinItems, err = count()
		case "maxItems":
			p.MaxItems, err = count()
		case "minProperties":
			p.MinProperties, err = count()
		case "maxProperties":
			p.MaxProperties, err = count()
		case "pattern":
			p.Pattern = v
		case "format":
			p.Format = v
		case "listType":
			if v != "atomic" && v != "set" && v != "map" {
				return required, fmt.Errorf("annex marker listType: %q is not atomic, set or map; write listType=set", v)
			}
			p.XListType = &v
		case "listMapKeys":
			p.XListMapKeys = strings.Split(v, "|")
		case "mapType":
			if v != "granular" && v != "atomic" {
				return required, fmt.Errorf("annex marker mapType: %q is not granular or atomic; write mapType=atomic", v)
			}
			p.XMapType = &v
		case "enum":
			for _, e := range strings.Split(v, "|") {
				raw, jerr := markerValue(p, e)
				if jerr != nil {
					return required, fmt.Errorf("annex marker enum: %w; write enum=a|b|c, or quote a JSON value: enum='1|2'", jerr)
				}
				p.Enum = append(p.Enum, raw)
			}
		case "default":
			raw, jerr := markerValue(p, v)
			if jerr != nil {
				return required, fmt.Errorf("annex marker default: %w; write default=1, default=text, or quote JSON with commas: default='{\"a\":1,\"b\":2}'", jerr)
			}
			p.Default = raw
			required = false // a defaulted field is never missing
		}
		if err != nil {
			return required, err
		}
	}
	return required, nil
}

// markerValue is the JSON of a marker value for node p: a string for a
// string node, the JSON literal otherwise.
func markerValue(p *schema.Props, v string) (json.RawMessage, error) {
	if p.Type == "string" {
		return json.Marshal(v)
	}
	if !json.Valid([]byte(v)) {
		if p.XIntOrString {
			return json.Marshal(v) // an int-or-string's string
		}
		return nil, fmt.Errorf("%q is not a JSON value", v)
	}
	return json.RawMessage(v), nil
}

const celList = "rule=, message=, messageExpression=, reason=, fieldPath=, optionalOldSelf=true"

// celRules parses a cel:"..." tag: each rule= starts a rule, and the
// message, messageExpression, reason, fieldPath and optionalOldSelf after
// it belong to it.
func celRules(tag string) ([]schema.ValidationRule, error) {
	items, err := splitItems("cel", tag)
	if err != nil {
		return nil, err
	}
	known := func(k string) bool {
		switch k {
		case "rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf":
			return true
		}
		return false
	}
	var out []schema.ValidationRule
	for i, it := range items {
		if !known(it.key) {
			return nil, unknownItem("cel", items, i, known, celList)
		}
		if !it.hasValue || it.value == "" {
			return nil, fmt.Errorf("cel marker %s needs a value: write %s='...'", it.key, it.key)
		}
		if it.key == "rule" {
			out = append(out, schema.ValidationRule{Rule: it.value})
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("cel marker %s comes before any rule; write rule='<CEL expression>',%s=%s first", it.key, it.key, quoteValue(it.value))
		}
		r := &out[len(out)-1]
		switch it.key {
		case "message":
			r.Message = it.value
		case "messageExpression":
			r.MessageExpression = it.value
		case "reason":
			switch it.value {
			case "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate":
			default:
				return nil, fmt.Errorf("cel marker reason: %q is not FieldValueInvalid, FieldValueForbidden, FieldValueRequired or FieldValueDuplicate; write reason=FieldValueForbidden", it.value)
			}
			r.Reason = it.value
		case "fieldPath":
			r.FieldPath = it.value
		case "optionalOldSelf":
			b, err := strconv.ParseBool(it.value)
			if err != nil {
				return nil, fmt.Errorf("cel marker optionalOldSelf: %q is not true or false; write optionalOldSelf=true", it.value)
			}
			r.OptionalOldSelf = &b
		}
	}
	return out, nil
}
