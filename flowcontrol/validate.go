// This file checks FlowSchemas and PriorityLevelConfigurations with kube's
// validation rules (pkg/apis/flowcontrol/validation), including the rules
// that keep the mandatory objects as kube fixes them.

package flowcontrol

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

var (
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	supportedVerbs   = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
)

// maxQueues is kube's limit on queues of a level (10^7).
const maxQueues = 10_000_000

// maxHashBits is the entropy shuffle sharding may draw from a flow's hash.
const maxHashBits = 60

type fieldErrs []string

func (e *fieldErrs) add(path, format string, args ...any) {
	*e = append(*e, path+": "+fmt.Sprintf(format, args...))
}

func (e fieldErrs) err(kind, name string) error {
	if len(e) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s %q: %s", ErrInvalidObject, kind, name, strings.Join(e, "; "))
}

func validName(e *fieldErrs, path, name string) {
	switch {
	case name == "":
		e.add(path, "Required value: name or generateName is required")
	case len(name) > 253 || !dns1123Subdomain.MatchString(name):
		e.add(path, "Invalid value: %q: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", name)
	}
}

func hasWildcard(list []string) bool { return slices.Contains(list, "*") }

// ValidateFlowSchema returns the errors of fs (after defaulting) by kube's
// rules, nil when it is valid.
func ValidateFlowSchema(fs *FlowSchema) error {
	var e fieldErrs
	validName(&e, "metadata.name", fs.Metadata.Name)
	s := &fs.Spec
	if s.MatchingPrecedence <= 0 {
		e.add("spec.matchingPrecedence", "Invalid value: %d: must be a positive value", s.MatchingPrecedence)
	}
	if s.MatchingPrecedence > MaxMatchingPrecedence {
		e.add("spec.matchingPrecedence", "Invalid value: %d: must not be greater than %d", s.MatchingPrecedence, MaxMatchingPrecedence)
	}
	if s.MatchingPrecedence == 1 && fs.Metadata.Name != NameExempt {
		e.add("spec.matchingPrecedence", "Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1")
	}
	if d := s.DistinguisherMethod; d != nil && d.Type != DistinguisherByUser && d.Type != DistinguisherByNamespace {
		e.add("spec.distinguisherMethod.type", "Unsupported value: %q: supported values: %q, %q", d.Type, DistinguisherByNamespace, DistinguisherByUser)
	}
	if n := s.PriorityLevelConfiguration.Name; n == "" {
		e.add("spec.priorityLevelConfiguration.name", "Required value: must reference a priority level")
	} else if len(n) > 253 || !dns1123Subdomain.MatchString(n) {
		e.add("spec.priorityLevelConfiguration.name", "Invalid value: %q: must be a lowercase RFC 1123 subdomain", n)
	}
	for i := range s.Rules {
		validateRules(&e, fmt.Sprintf("spec.rules[%d]", i), &s.Rules[i])
	}
	for _, m := range MandatoryFlowSchemas() {
		if m.Metadata.Name == fs.Metadata.Name && !reflect.DeepEqual(normalizeFS(m.Spec), normalizeFS(fs.Spec)) {
			e.add("spec", "Invalid value: spec of '%s' must equal the fixed value", fs.Metadata.Name)
		}
	}
	return e.err(KindFlowSchema, fs.Metadata.Name)
}

// normalizeFS turns empty slices into nil so that "semantic" equality holds
// between a spec read from YAML and one written in Go.
func normalizeFS(s FlowSchemaSpec) FlowSchemaSpec {
	var rules []PolicyRulesWithSubjects
	for _, r := range s.Rules {
		n := PolicyRulesWithSubjects{Subjects: slices.Clip(r.Subjects)}
		for _, rr := range r.ResourceRules {
			n.ResourceRules = append(n.ResourceRules, ResourcePolicyRule{Verbs: nilIfEmpty(rr.Verbs), APIGroups: nilIfEmpty(rr.APIGroups),
				Resources: nilIfEmpty(rr.Resources), ClusterScope: rr.ClusterScope, Namespaces: nilIfEmpty(rr.Namespaces)})
		}
		for _, nr := range r.NonResourceRules {
			n.NonResourceRules = append(n.NonResourceRules, NonResourcePolicyRule{Verbs: nilIfEmpty(nr.Verbs), NonResourceURLs: nilIfEmpty(nr.NonResourceURLs)})
		}
		rules = append(rules, n)
	}
	s.Rules = rules
	return s
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func validateRules(e *fieldErrs, path string, r *PolicyRulesWithSubjects) {
	if len(r.Subjects) == 0 {
		e.add(path+".subjects", "Required value: subjects must contain at least one value")
	}
	for i, s := range r.Subjects {
		validateSubject(e, fmt.Sprintf("%s.subjects[%d]", path, i), &s)
	}
	if len(r.ResourceRules) == 0 && len(r.NonResourceRules) == 0 {
		e.add(path, "Required value: at least one of resourceRules and nonResourceRules has to be non-empty")
	}
	for i, rr := range r.ResourceRules {
		p := fmt.Sprintf("%s.resourceRules[%d]", path, i)
		validateVerbs(e, p, rr.Verbs)
		if len(rr.APIGroups) == 0 {
			e.add(p+".apiGroups", "Required value: resource rules must supply at least one api group")
		} else if len(rr.APIGroups) > 1 && hasWildcard(rr.APIGroups) {
			e.add(p+".apiGroups", "Invalid value: %q: if '*' is present, must not specify other api groups", rr.APIGroups)
		}
		if len(rr.Resources) == 0 {
			e.add(p+".resources", "Required value: resource rules must supply at least one resource")
		} else if len(rr.Resources) > 1 && hasWildcard(rr.Resources) {
			e.add(p+".resources", "Invalid value: %q: if '*' is present, must not specify other resources", rr.Resources)
		}
		switch {
		case len(rr.Namespaces) == 0 && !rr.ClusterScope:
			e.add(p+".namespaces", "Required value: resource rules that are not cluster scoped must supply at least one namespace")
		case hasWildcard(rr.Namespaces):
			if len(rr.Namespaces) > 1 {
				e.add(p+".namespaces", "Invalid value: %q: if '*' is present, must not specify other namespaces", rr.Namespaces)
			}
		default:
			for j, ns := range rr.Namespaces {
				if len(ns) > 63 || !dns1123Label.MatchString(ns) {
					e.add(fmt.Sprintf("%s.namespaces[%d]", p, j), "Invalid value: %q: each member of this list must be '*' or a DNS-1123 label", ns)
				}
			}
		}
	}
	for i, nr := range r.NonResourceRules {
		p := fmt.Sprintf("%s.nonResourceRules[%d]", path, i)
		validateVerbs(e, p, nr.Verbs)
		switch {
		case len(nr.NonResourceURLs) == 0:
			e.add(p+".nonResourceURLs", "Required value: nonResourceURLs must contain at least one value")
		case hasWildcard(nr.NonResourceURLs):
			if len(nr.NonResourceURLs) > 1 {
				e.add(p+".nonResourceURLs", "Invalid value: %q: if '*' is present, must not specify other non-resource URLs", nr.NonResourceURLs)
			}
		default:
			for j, u := range nr.NonResourceURLs {
				if msg := nonResourceURLProblem(u); msg != "" {
					e.add(fmt.Sprintf("%s.nonResourceURLs[%d]", p, j), "Invalid value: %q: %s", u, msg)
				}
			}
		}
	}
}

func validateVerbs(e *fieldErrs, p string, verbs []string) {
	switch {
	case len(verbs) == 0:
		e.add(p+".verbs", "Required value: verbs must contain at least one value")
	case hasWildcard(verbs):
		if len(verbs) > 1 {
			e.add(p+".verbs", "Invalid value: %q: if '*' is present, must not specify other verbs", verbs)
		}
	default:
		for _, v := range verbs {
			if !slices.Contains(supportedVerbs, v) {
				e.add(p+".verbs", "Unsupported value: %q: supported values: %q", verbs, supportedVerbs)
				break
			}
		}
	}
}

// nonResourceURLProblem applies kube's ValidateNonResourceURLPath.
func nonResourceURLProblem(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case p == "/":
		return ""
	case !strings.HasPrefix(p, "/"):
		return "must start with slash"
	case strings.Contains(p, " "):
		return "must not contain white-space"
	case strings.Contains(p, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(p, "*"); n > 1 || (n == 1 && !strings.HasSuffix(p, "/*")) {
		return "wildcard can only do suffix matching"
	}
	return ""
}

func validateSubject(e *fieldErrs, p string, s *Subject) {
	other := func(field, kind string) {
		e.add(p+"."+field, "Forbidden: %s is forbidden when subject kind is not '%s'", field, kind)
	}
	switch s.Kind {
	case SubjectKindServiceAccount:
		sa := s.ServiceAccount
		if sa == nil {
			e.add(p+".serviceAccount", "Required value: serviceAccount is required when subject kind is 'ServiceAccount'")
		} else {
			if sa.Name == "" {
				e.add(p+".serviceAccount.name", "Required value")
			} else if sa.Name != NameAll && (len(sa.Name) > 253 || !dns1123Subdomain.MatchString(sa.Name)) {
				e.add(p+".serviceAccount.name", "Invalid value: %q: must be a lowercase RFC 1123 subdomain", sa.Name)
			}
			if sa.Namespace == "" {
				e.add(p+".serviceAccount.namespace", "Required value: must specify namespace for service account")
			} else if len(sa.Namespace) > 63 || !dns1123Label.MatchString(sa.Namespace) {
				e.add(p+".serviceAccount.namespace", "Invalid value: %q: must be a lowercase RFC 1123 label", sa.Namespace)
			}
		}
		if s.User != nil {
			other("user", SubjectKindUser)
		}
		if s.Group != nil {
			other("group", SubjectKindGroup)
		}
	case SubjectKindUser:
		if s.User == nil {
			e.add(p+".user", "Required value: user is required when subject kind is 'User'")
		} else if s.User.Name == "" {
			e.add(p+".user.name", "Required value")
		}
		if s.ServiceAccount != nil {
			other("serviceAccount", SubjectKindServiceAccount)
		}
		if s.Group != nil {
			other("group", SubjectKindGroup)
		}
	case SubjectKindGroup:
		if s.Group == nil {
			e.add(p+".group", "Required value: group is required when subject kind is 'Group'")
		} else if s.Group.Name == "" {
			e.add(p+".group.name", "Required value")
		}
		if s.ServiceAccount != nil {
			other("serviceAccount", SubjectKindServiceAccount)
		}
		if s.User != nil {
			other("user", SubjectKindUser)
		}
	default:
		e.add(p+".kind", "Unsupported value: %q: supported values: \"Group\", \"ServiceAccount\", \"User\"", s.Kind)
	}
}

// ValidatePriorityLevel returns the errors of pl (after defaulting) by
// kube's rules, nil when it is valid. The mandatory catch-all level must
// equal kube's; of the exempt level only spec.exempt may differ.
func ValidatePriorityLevel(pl *PriorityLevelConfiguration) error {
	var e fieldErrs
	name := pl.Metadata.Name
	validName(&e, "metadata.name", name)
	s := &pl.Spec
	if (name == NameExempt) != (s.Type == PriorityLevelExempt) {
		e.add("spec.type", "Invalid value: %q: type must be 'Exempt' if and only if name is 'exempt'", s.Type)
	}
	switch s.Type {
	case PriorityLevelExempt:
		if s.Limited != nil {
			e.add("spec.limited", "Forbidden: must be nil if the type is not Limited")
		}
		if x := s.Exempt; x != nil {
			if x.NominalConcurrencyShares != nil && *x.NominalConcurrencyShares < 0 {
				e.add("spec.exempt.nominalConcurrencyShares", "Invalid value: %d: must be a non-negative integer", *x.NominalConcurrencyShares)
			}
			if x.LendablePercent != nil && (*x.LendablePercent < 0 || *x.LendablePercent > 100) {
				e.add("spec.exempt.lendablePercent", "Invalid value: %d: must be between 0 and 100, inclusive", *x.LendablePercent)
			}
		}
	case PriorityLevelLimited:
		if s.Exempt != nil {
			e.add("spec.exempt", "Forbidden: must be nil if the type is Limited")
		}
		l := s.Limited
		if l == nil {
			e.add("spec.limited", "Required value: must not be empty when type is Limited")
			break
		}
		if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
			e.add("spec.limited.nominalConcurrencyShares", "Invalid value: %d: must be a non-negative integer", *l.NominalConcurrencyShares)
		}
		if l.LendablePercent != nil && (*l.LendablePercent < 0 || *l.LendablePercent > 100) {
			e.add("spec.limited.lendablePercent", "Invalid value: %d: must be between 0 and 100, inclusive", *l.LendablePercent)
		}
		if l.BorrowingLimitPercent != nil && *l.BorrowingLimitPercent < 0 {
			e.add("spec.limited.borrowingLimitPercent", "Invalid value: %d: if specified, must be a non-negative integer", *l.BorrowingLimitPercent)
		}
		switch lr := l.LimitResponse; lr.Type {
		case LimitResponseReject:
			if lr.Queuing != nil {
				e.add("spec.limited.limitResponse.queuing", "Forbidden: must be nil if limited.limitResponse.type is not Limited")
			}
		case LimitResponseQueue:
			q := lr.Queuing
			if q == nil {
				e.add("spec.limited.limitResponse.queuing", "Required value: must not be empty if limited.limitResponse.type is Limited")
				break
			}
			p := "spec.limited.limitResponse.queuing"
			if q.QueueLengthLimit <= 0 {
				e.add(p+".queueLengthLimit", "Invalid value: %d: must be positive", q.QueueLengthLimit)
			}
			if q.Queues <= 0 {
				e.add(p+".queues", "Invalid value: %d: must be positive", q.Queues)
			} else if q.Queues > maxQueues {
				e.add(p+".queues", "Invalid value: %d: must not be greater than %d", q.Queues, maxQueues)
			}
			switch {
			case q.HandSize <= 0:
				e.add(p+".handSize", "Invalid value: %d: must be positive", q.HandSize)
			case q.HandSize > q.Queues:
				e.add(p+".handSize", "Invalid value: %d: should not be greater than queues (%d)", q.HandSize, q.Queues)
			case entropyBits(int(q.Queues), int(q.HandSize)) > maxHashBits:
				e.add(p+".handSize", "Invalid value: %d: required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.HandSize, q.Queues, q.HandSize, maxHashBits)
			}
		default:
			e.add("spec.limited.limitResponse.type", "Unsupported value: %q: supported values: \"Queue\", \"Reject\"", lr.Type)
		}
	default:
		e.add("spec.type", "Unsupported value: %q: supported values: \"Exempt\", \"Limited\"", s.Type)
	}
	for _, m := range MandatoryPriorityLevels() {
		if m.Metadata.Name != name {
			continue
		}
		have := *s
		if name == NameExempt {
			have.Exempt = m.Spec.Exempt
			if !reflect.DeepEqual(m.Spec, have) {
				e.add("spec", "Invalid value: spec of '%s' except the 'spec.exempt' field must equal the fixed value", name)
			}
		} else if !reflect.DeepEqual(m.Spec, have) {
			e.add("spec", "Invalid value: spec of '%s' must equal the fixed value", name)
		}
	}
	return e.err(KindPriorityLevelConfiguration, name)
}

// entropyBits is kube's RequiredEntropyBits: the hash bits dealing a hand of
// handSize from deckSize queues consumes.
func entropyBits(deckSize, handSize int) int {
	return int(math.Ceil(math.Log2(float64(deckSize)) * float64(handSize)))
}
