// This file classifies a request: the first FlowSchema (by matchingPrecedence
// then name) whose rules match its user and what it asks for, the flow
// distinguisher, the flow's hash, and the shuffle-sharding dealer that turns
// that hash into a hand of queues.

package flowcontrol

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/annexapi/annex/filters"
)

// matchesSchema reports whether some rule set of fs matches.
func matchesSchema(fs *FlowSchema, u *filters.User, info *filters.RequestInfo) bool {
	for i := range fs.Spec.Rules {
		r := &fs.Spec.Rules[i]
		if !matchesASubject(r.Subjects, u) {
			continue
		}
		if info.IsResourceRequest {
			for _, rr := range r.ResourceRules {
				if matchesResourceRule(&rr, info) {
					return true
				}
			}
			continue
		}
		for _, nr := range r.NonResourceRules {
			if containsOrWildcard(nr.Verbs, info.Verb, VerbAll) && matchesNonResourceURL(nr.NonResourceURLs, info.Path) {
				return true
			}
		}
	}
	return false
}

func matchesASubject(subjects []Subject, u *filters.User) bool {
	for _, s := range subjects {
		switch s.Kind {
		case SubjectKindUser:
			if s.User != nil && (s.User.Name == NameAll || s.User.Name == u.Name) {
				return true
			}
		case SubjectKindGroup:
			if s.Group != nil && (s.Group.Name == NameAll || slices.Contains(u.Groups, s.Group.Name)) {
				return true
			}
		case SubjectKindServiceAccount:
			if sa := s.ServiceAccount; sa != nil {
				const prefix = "system:serviceaccount:"
				rest, ok := strings.CutPrefix(u.Name, prefix)
				if !ok {
					continue
				}
				if sa.Name == NameAll {
					if strings.HasPrefix(rest, sa.Namespace+":") {
						return true
					}
				} else if rest == sa.Namespace+":"+sa.Name {
					return true
				}
			}
		}
	}
	return false
}

func matchesResourceRule(rr *ResourcePolicyRule, info *filters.RequestInfo) bool {
	if !containsOrWildcard(rr.Verbs, info.Verb, VerbAll) {
		return false
	}
	res := info.Resource
	if info.Subresource != "" {
		res += "/" + info.Subresource
	}
	if !containsOrWildcard(rr.Resources, res, ResourceAll) || !containsOrWildcard(rr.APIGroups, info.APIGroup, APIGroupAll) {
		return false
	}
	if info.Namespace == "" {
		return rr.ClusterScope
	}
	return containsOrWildcard(rr.Namespaces, info.Namespace, NamespaceEvery)
}

// containsOrWildcard is kube's containsString: the wildcard counts only as
// the sole element of the list.
func containsOrWildcard(list []string, x, wildcard string) bool {
	if len(list) == 1 && list[0] == wildcard {
		return true
	}
	return slices.Contains(list, x)
}

// matchesNonResourceURL is kube's rule: "*", an exact path, or the rule with
// a trailing "*" removed and a "/" ensured at its end as a prefix, so
// "/healthz/*" (and "/healthz") match "/healthz/etcd" but not "/healthz" itself
// through the prefix.
func matchesNonResourceURL(urls []string, path string) bool {
	for _, u := range urls {
		if u == NonResourceAll || u == path {
			return true
		}
		prefix := strings.TrimSuffix(u, "*")
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

// distinguisher returns the flow distinguisher of a request: the user name
// (ByUser), the namespace (ByNamespace) or "" (no method: one flow).
func distinguisher(fs *FlowSchema, u *filters.User, info *filters.RequestInfo) string {
	if fs.Spec.DistinguisherMethod == nil {
		return ""
	}
	switch fs.Spec.DistinguisherMethod.Type {
	case DistinguisherByUser:
		return u.Name
	case DistinguisherByNamespace:
		return info.Namespace
	}
	return ""
}

// FlowHash is kube's hash of a flow: the first 8 bytes, little-endian, of
// sha256(schema name, a zero byte, distinguisher).
func FlowHash(schema, distinguisher string) uint64 {
	h := sha256.New()
	h.Write([]byte(schema))
	h.Write([]byte{0})
	h.Write([]byte(distinguisher))
	var sum [sha256.Size]byte
	return binary.LittleEndian.Uint64(h.Sum(sum[:0])[:8])
}

// Deal is shuffle sharding as kube's shufflesharding.Dealer does it: the
// hash, read as a number in the mixed radix (deckSize, deckSize-1, ...),
// picks handSize distinct queues out of deckSize. It appends the hand to
// hand[:0] and returns it. handSize must be at most deckSize and at most 15.
func Deal(hash uint64, deckSize, handSize int, hand []int) []int {
	var rem [15]int
	for i := range handSize {
		next := hash / uint64(deckSize-i)
		rem[i] = int(hash - uint64(deckSize-i)*next)
		hash = next
	}
	hand = hand[:0]
	for i := range handSize {
		card := rem[i]
		for j := i; j > 0; j-- {
			if card >= rem[j-1] {
				card++
			}
		}
		hand = append(hand, card)
	}
	return hand
}
