// This file renders Table output for kubectl get: a name column, the
// declared printer columns (or Age), cells evaluated from the simple JSONPath
// subset CRD additionalPrinterColumns allow, and row objects per
// includeObject, as the CRD table convertor does.

package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// Column descriptions k8s gives the built-in columns.
const (
	descNameColumn = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
	descAgeColumn  = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

// tableColumns are a resource's columns and their compiled paths.
type tableColumns struct {
	defs  []meta.TableColumnDefinition
	paths [][]pathStep // one per column after Name
	types []string
}

func newTableColumns(cols []PrinterColumn) tableColumns {
	if len(cols) == 0 {
		cols = []PrinterColumn{{Name: "Age", Type: meta.ColumnTypeDate, Description: descAgeColumn, JSONPath: ".metadata.creationTimestamp"}}
	}
	t := tableColumns{defs: []meta.TableColumnDefinition{{Name: "Name", Type: meta.ColumnTypeString, Format: meta.ColumnFormatName, Description: descNameColumn}}}
	for _, c := range cols {
		steps, _ := parseJSONPath(c.JSONPath) // validated by NewHandler
		t.defs = append(t.defs, meta.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority})
		t.paths = append(t.paths, steps)
		t.types = append(t.types, c.Type)
	}
	return t
}

// pathStep is one step of a JSONPath: a field, an index, [*] (index -1),
// or a filter of array elements ([?(@.a == "x")], filter set).
type pathStep struct {
	field  string
	index  int
	isIdx  bool
	filter *pathFilter
}

// pathFilter keeps the elements whose value at path compares with value
// (op one of == != < > <= >=), or that have a value there (op "").
type pathFilter struct {
	path  []pathStep
	op    string
	value any // string, float64 or bool
}

// errJSONPath is returned for a JSONPath outside the supported subset.
var errJSONPath = errors.New("unsupported JSONPath")

// parseJSONPath parses ".a.b[0].c", "{.a}" or ".a[*].b".
func parseJSONPath(p string) ([]pathStep, error) {
	p = strings.TrimSpace(p)
	if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
		p = p[1 : len(p)-1]
	}
	if !strings.HasPrefix(p, ".") {
		return nil, fmt.Errorf("%w %q: must start with a dot", errJSONPath, p)
	}
	var steps []pathStep
	for p != "" {
		switch p[0] {
		case '.':
			p = p[1:]
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			if end == 0 {
				return nil, fmt.Errorf("%w: empty field name", errJSONPath)
			}
			steps = append(steps, pathStep{field: p[:end]})
			p = p[end:]
		case '[':
			end := closingBracket(p)
			if end < 0 {
				return nil, fmt.Errorf("%w: unclosed [", errJSONPath)
			}
			in := p[1:end]
			p = p[end+1:]
			if strings.HasPrefix(in, "?(") && strings.HasSuffix(in, ")") {
				f, err := parseFilter(in[2 : len(in)-1])
				if err != nil {
					return nil, err
				}
				steps = append(steps, pathStep{index: -1, isIdx: true, filter: f})
				continue
			}
			if in == "*" {
				steps = append(steps, pathStep{index: -1, isIdx: true})
				continue
			}
			n, err := strconv.Atoi(in)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: index %q", errJSONPath, in)
			}
			steps = append(steps, pathStep{index: n, isIdx: true})
		default:
			return nil, fmt.Errorf("%w: unexpected %q", errJSONPath, p[:1])
		}
	}
	return steps, nil
}

// closingBracket is the index of the "]" closing the "[" at p[0], quotes
// skipped; -1 when there is none.
func closingBracket(p string) int {
	var quote byte
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == ']':
			return i
		}
	}
	return -1
}

// parseFilter parses the inside of [?( )]: "@.a.b", or "@.a.b <op> <literal>"
// with a quoted string, a number, true or false.
func parseFilter(s string) (*pathFilter, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "@") {
		return nil, fmt.Errorf("%w: filter %q must start with @", errJSONPath, s)
	}
	s = s[1:]
	end := strings.IndexAny(s, " =!<>")
	if end < 0 {
		end = len(s)
	}
	path, rest := s[:end], strings.TrimSpace(s[end:])
	steps, err := parseJSONPath(path)
	if err != nil || len(steps) == 0 {
		return nil, fmt.Errorf("%w: filter path %q", errJSONPath, path)
	}
	f := &pathFilter{path: steps}
	if rest == "" {
		return f, nil
	}
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if lit, ok := strings.CutPrefix(rest, op); ok {
			f.op = op
			rest = strings.TrimSpace(lit)
			break
		}
	}
	switch {
	case f.op == "":
		return nil, fmt.Errorf("%w: filter operator in %q", errJSONPath, s)
	case len(rest) >= 2 && (rest[0] == '"' || rest[0] == '\'') && rest[len(rest)-1] == rest[0]:
		f.value = rest[1 : len(rest)-1]
	case rest == "true" || rest == "false":
		f.value = rest == "true"
	default:
		n, err := strconv.ParseFloat(rest, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: filter value %q", errJSONPath, rest)
		}
		f.value = n
	}
	return f, nil
}

// matches says whether element e passes the filter.
func (f *pathFilter) matches(e any) bool {
	vals := evalPath(e, f.path)
	if f.op == "" {
		return len(vals) > 0
	}
	if len(vals) == 0 {
		return false
	}
	var cmp int
	switch want := f.value.(type) {
	case string:
		got, ok := vals[0].(string)
		if !ok {
			return f.op == "!="
		}
		cmp = strings.Compare(got, want)
	case bool:
		got, ok := vals[0].(bool)
		if !ok {
			return f.op == "!="
		}
		switch {
		case got == want:
			cmp = 0
		case got:
			cmp = 1
		default:
			cmp = -1
		}
	case float64:
		var got float64
		switch n := vals[0].(type) {
		case json.Number:
			var err error
			if got, err = n.Float64(); err != nil {
				return f.op == "!="
			}
		case float64:
			got = n
		default:
			return f.op == "!="
		}
		switch {
		case got < want:
			cmp = -1
		case got > want:
			cmp = 1
		}
	}
	switch f.op {
	case "==":
		return cmp == 0
	case "!=":
		return cmp != 0
	case "<":
		return cmp < 0
	case ">":
		return cmp > 0
	case "<=":
		return cmp <= 0
	}
	return cmp >= 0
}

// evalPath returns every value steps select in v.
func evalPath(v any, steps []pathStep) []any {
	if len(steps) == 0 {
		if v == nil {
			return nil
		}
		return []any{v}
	}
	s := steps[0]
	switch {
	case !s.isIdx:
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		c, ok := m[s.field]
		if !ok {
			return nil
		}
		return evalPath(c, steps[1:])
	default:
		a, ok := v.([]any)
		if !ok {
			return nil
		}
		if s.index >= 0 {
			if s.index >= len(a) {
				return nil
			}
			return evalPath(a[s.index], steps[1:])
		}
		var out []any
		for _, e := range a {
			if s.filter != nil && !s.filter.matches(e) {
				continue
			}
			out = append(out, evalPath(e, steps[1:])...)
		}
		return out
	}
}

// cell turns the values of a column into a cell as the CRD convertor does:
// nothing is null; a date is an age; several values are joined by commas.
func cell(typ string, vals []any, now time.Time) any {
	if len(vals) == 0 {
		return nil
	}
	if typ == meta.ColumnTypeDate {
		s, _ := vals[0].(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return "<unknown>"
		}
		return humanDuration(now.Sub(t))
	}
	if len(vals) == 1 {
		switch v := vals[0].(type) {
		case json.Number:
			if typ == meta.ColumnTypeInteger {
				if n, err := v.Int64(); err == nil {
					return n
				}
			}
			if f, err := v.Float64(); err == nil {
				return f
			}
			return v.String()
		case string, bool:
			return v
		}
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch t := v.(type) {
		case string:
			parts[i] = t
		default:
			b, _ := json.Marshal(t)
			parts[i] = string(b)
		}
	}
	return strings.Join(parts, ",")
}

// humanDuration is k8s's duration.HumanDuration: "45s", "5m30s", "3h", "2d".
func humanDuration(d time.Duration) string {
	if seconds := int(d.Seconds()); seconds < -1 {
		return "<invalid>"
	} else if seconds < 0 {
		return "0s"
	} else if seconds < 60*2 {
		return fmt.Sprintf("%ds", seconds)
	}
	minutes := int(d / time.Minute)
	if minutes < 10 {
		if s := int(d/time.Second) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", minutes, s)
		}
		return fmt.Sprintf("%dm", minutes)
	} else if minutes < 60*3 {
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int(d / time.Hour)
	switch {
	case hours < 8:
		if m := int(d/time.Minute) % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", hours, m)
		}
		return fmt.Sprintf("%dh", hours)
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 24*8:
		if h := hours % 24; h != 0 {
			return fmt.Sprintf("%dd%dh", hours/24, h)
		}
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*2:
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*8:
		if dy := (hours / 24) % 365; dy != 0 {
			return fmt.Sprintf("%dy%dd", hours/24/365, dy)
		}
		return fmt.Sprintf("%dy", hours/24/365)
	}
	return fmt.Sprintf("%dy", hours/24/365)
}

// row builds the row of one stored object.
func (rh *resourceHandler) row(o output, data []byte, now time.Time) meta.TableRow {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	_ = dec.Decode(&obj)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	cells := make([]any, 0, 1+len(rh.columns.paths))
	cells = append(cells, name)
	for i, steps := range rh.columns.paths {
		cells = append(cells, cell(rh.columns.types[i], evalPath(obj, steps), now))
	}
	r := meta.TableRow{Cells: cells}
	switch o.include {
	case meta.IncludeObject:
		r.Object = json.RawMessage(data)
	case meta.IncludeMetadata:
		r.Object = appendPartial(nil, o.apiVersion(), data)
	}
	return r
}

// encodeTable encodes a Table of items; withColumns false writes
// "columnDefinitions":null (later watch events).
func (rh *resourceHandler) encodeTable(o output, items []storage.Object, lm meta.ListMeta, withColumns bool) []byte {
	now := time.Now()
	t := meta.Table{TypeMeta: meta.TypeMeta{Kind: meta.KindTable, APIVersion: o.apiVersion()}, Metadata: lm, Rows: make([]meta.TableRow, 0, len(items))}
	if withColumns {
		t.ColumnDefinitions = rh.columns.defs
	}
	for i := range items {
		t.Rows = append(t.Rows, rh.row(o, items[i].Data, now))
	}
	b, err := json.Marshal(t)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}
