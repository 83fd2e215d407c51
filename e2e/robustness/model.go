// This file holds the porcupine model of one key of the Kubernetes storage
// contract, and the conversion of a history's single-key operations into
// porcupine operations.

package robustness

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// keyState is the model's state of one key: whether the object exists, its
// resourceVersion (after a delete: the revision of the delete) and value.
// RVUnknown marks the state after a write whose response was lost and whose
// revision nobody observed: RV then holds a lower bound.
type keyState struct {
	Exists    bool
	RV        uint64
	Value     string
	RVUnknown bool
}

// modelInput is a single-key operation as the model sees it.
type modelInput struct {
	Kind         OpKind
	Value        string
	Precondition uint64
}

// modelOutput is its result; Outcome Unknown means the write may or may not
// have taken effect.
type modelOutput struct {
	Outcome Outcome
	RV      uint64
	Value   string
}

// rvAfter reports whether rv may follow state s: resourceVersions of one key
// strictly increase (they are revisions of one global counter).
func rvAfter(s keyState, rv uint64) bool { return rv > s.RV }

// preconditionHolds reports whether a precondition p may hold in s.
func preconditionHolds(s keyState, p uint64) bool { return p == 0 || s.RV == p || s.RVUnknown }

// preconditionFails reports whether a precondition p may fail in s.
func preconditionFails(s keyState, p uint64) bool { return p != 0 && (s.RV != p || s.RVUnknown) }

// step is the nondeterministic model: every state the key may be in after
// the operation, none if the operation cannot have returned what it did.
func step(s keyState, in modelInput, out modelOutput) []keyState {
	var next []keyState
	switch in.Kind {
	case OpGet:
		switch out.Outcome {
		case OK:
			if s.Exists && s.Value == out.Value && (!s.RVUnknown && s.RV == out.RV || s.RVUnknown && out.RV > s.RV) {
				next = append(next, keyState{Exists: true, RV: out.RV, Value: out.Value})
			}
		case NotFound:
			if !s.Exists {
				next = append(next, s)
			}
		}
	case OpCreate:
		switch out.Outcome {
		case OK:
			if !s.Exists && rvAfter(s, out.RV) && out.Value == in.Value {
				next = append(next, keyState{Exists: true, RV: out.RV, Value: in.Value})
			}
		case AlreadyExists:
			if s.Exists {
				next = append(next, s)
			}
		case Unknown:
			next = append(next, s)
			if !s.Exists {
				next = append(next, keyState{Exists: true, RV: s.RV, Value: in.Value, RVUnknown: true})
			}
		}
	case OpUpdate, OpPatch:
		switch out.Outcome {
		case OK:
			if s.Exists && preconditionHolds(s, in.Precondition) && rvAfter(s, out.RV) && out.Value == in.Value {
				next = append(next, keyState{Exists: true, RV: out.RV, Value: in.Value})
			}
		case Conflict:
			if s.Exists && preconditionFails(s, in.Precondition) {
				next = append(next, s)
			}
		case NotFound:
			if !s.Exists {
				next = append(next, s)
			}
		case Unknown:
			next = append(next, s)
			if s.Exists && preconditionHolds(s, in.Precondition) {
				next = append(next, keyState{Exists: true, RV: s.RV, Value: in.Value, RVUnknown: true})
			}
		}
	case OpDelete:
		switch out.Outcome {
		case OK:
			// The response is the object as it was, at the delete's revision.
			if s.Exists && preconditionHolds(s, in.Precondition) && rvAfter(s, out.RV) && out.Value == s.Value {
				next = append(next, keyState{RV: out.RV})
			}
		case Conflict:
			if s.Exists && preconditionFails(s, in.Precondition) {
				next = append(next, s)
			}
		case NotFound:
			if !s.Exists {
				next = append(next, s)
			}
		case Unknown:
			next = append(next, s)
			if s.Exists && preconditionHolds(s, in.Precondition) {
				next = append(next, keyState{RV: s.RV, RVUnknown: true})
			}
		}
	}
	return next
}

// KeyModel is the porcupine model of one key, starting absent.
func KeyModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{keyState{}} },
		Step: func(state, input, output any) []any {
			var out []any
			for _, s := range step(state.(keyState), input.(modelInput), output.(modelOutput)) {
				out = append(out, s)
			}
			return out
		},
		Equal: func(a, b any) bool { return a.(keyState) == b.(keyState) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(modelInput), output.(modelOutput)
			pre := ""
			if in.Precondition != 0 {
				pre = fmt.Sprintf(" if rv=%d", in.Precondition)
			}
			res := string(out.Outcome)
			if out.Outcome == OK {
				res = fmt.Sprintf("ok rv=%d %q", out.RV, out.Value)
			}
			return fmt.Sprintf("%s(%q%s) -> %s", in.Kind, in.Value, pre, res)
		},
		DescribeState: func(state any) string {
			s := state.(keyState)
			if !s.Exists {
				return fmt.Sprintf("absent (rv %d)", s.RV)
			}
			if s.RVUnknown {
				return fmt.Sprintf("%q rv>%d", s.Value, s.RV)
			}
			return fmt.Sprintf("%q rv=%d", s.Value, s.RV)
		},
	}
	return nm.ToModel()
}

// keyOperations turns the single-key operations of a history into porcupine
// operations per key. A write without a response whose value some read or
// watch event shows (values are unique per write) is given that outcome,
// still with an open end; the others stay Unknown with an open end, so that
// they may take effect any time after their call. Reads without a response
// prove nothing and are left out, as are reads that may be stale (get with
// resourceVersion "0").
func keyOperations(h *History, seenValue map[string]uint64) map[string][]porcupine.Operation {
	per := map[string][]porcupine.Operation{}
	for _, op := range h.Ops {
		in := modelInput{Kind: op.Kind, Value: op.Value, Precondition: op.Precondition}
		var out modelOutput
		ret := op.Return
		switch op.Kind {
		case OpGet:
			if op.RV != "" || (op.Outcome != OK && op.Outcome != NotFound) {
				continue
			}
			in.Value = ""
		case OpCreate, OpUpdate, OpPatch, OpDelete:
		default:
			continue
		}
		if op.Outcome == Refused {
			continue
		}
		out.Outcome = op.Outcome
		if op.Obj != nil {
			out.RV, out.Value = op.Obj.RV, op.Obj.Value
		}
		if op.Outcome == Unknown || op.Outcome == Rejected || op.Outcome == Expired {
			out = modelOutput{Outcome: Unknown}
			ret = math.MaxInt64
			if rv, ok := seenValue[op.Value]; ok && op.Kind != OpDelete {
				out = modelOutput{Outcome: OK, RV: rv, Value: op.Value}
			}
		}
		per[op.Key] = append(per[op.Key], porcupine.Operation{ClientId: op.Client, Input: in, Call: op.Call, Output: out, Return: ret})
	}
	return per
}
