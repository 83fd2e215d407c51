package field

import (
	"strconv"
	"strings"
)

// Path is the path of a field from the object's root: a name, then children
// (.name) and subscripts ([index] or [key]). The zero of *Path, nil, prints
// "<nil>".
type Path struct {
	name   string // a field name, or "" for a subscript
	index  string // the subscript, when name is ""
	parent *Path
}

// NewPath returns the path of the root field name and, below it, more.
func NewPath(name string, more ...string) *Path {
	p := &Path{name: name}
	for _, n := range more {
		p = &Path{name: n, parent: p}
	}
	return p
}

// Child returns the path of field name (and, below it, more) under p.
func (p *Path) Child(name string, more ...string) *Path {
	r := NewPath(name, more...)
	root := r
	for root.parent != nil {
		root = root.parent
	}
	root.parent = p
	return r
}

// Index returns the path of element i of the list at p.
func (p *Path) Index(i int) *Path { return &Path{index: strconv.Itoa(i), parent: p} }

// Key returns the path of entry key of the map at p.
func (p *Path) Key(key string) *Path { return &Path{index: key, parent: p} }

// String is the path as kube prints it: spec.containers[0].name.
func (p *Path) String() string {
	if p == nil {
		return "<nil>"
	}
	var elems []*Path
	for e := p; e != nil; e = e.parent {
		elems = append(elems, e)
	}
	var b strings.Builder
	for i := len(elems) - 1; i >= 0; i-- {
		e := elems[i]
		switch {
		case e.name != "":
			if e.parent != nil {
				b.WriteByte('.')
			}
			b.WriteString(e.name)
		default:
			b.WriteByte('[')
			b.WriteString(e.index)
			b.WriteByte(']')
		}
	}
	return b.String()
}
