package flowcontrol

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/annexapi/annex/filters"
)

func TestClassifyDefaults(t *testing.T) {
	t.Parallel()
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	snap := c.state.Load()
	authn := func(name string, groups ...string) *filters.User {
		return &filters.User{Name: name, Groups: append(groups, "system:authenticated")}
	}
	tests := []struct {
		name   string
		method string
		path   string
		user   *filters.User
		want   string
	}{
		{name: "masters_exempt", method: "GET", path: "/apis/g/v1/things", user: authn("admin", "system:masters"), want: "exempt"},
		{name: "probe_exempt", method: "GET", path: "/healthz", user: &filters.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, want: "probes"},
		{name: "probe_subpath_exempt", method: "GET", path: "/readyz/etcd", user: authn("x"), want: "probes"},
		{name: "probe_post_not_exempt", method: "POST", path: "/healthz", user: authn("x"), want: "global-default"},
		{name: "node_lease_high", method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", user: authn("system:node:n1", "system:nodes"), want: "system-node-high"},
		{name: "node_nodes_status_high", method: "PATCH", path: "/api/v1/nodes/n1/status", user: authn("system:node:n1", "system:nodes"), want: "system-node-high"},
		{name: "node_pods_system", method: "GET", path: "/api/v1/namespaces/a/pods", user: authn("system:node:n1", "system:nodes"), want: "system-nodes"},
		{name: "kcm_leader_election", method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kcm", user: authn("system:kube-controller-manager"), want: "system-leader-election"},
		{name: "kcm_other", method: "GET", path: "/api/v1/pods", user: authn("system:kube-controller-manager"), want: "kube-controller-manager"},
		{name: "scheduler_same_precedence_by_name", method: "GET", path: "/api/v1/pods", user: authn("system:kube-scheduler"), want: "kube-scheduler"},
		{name: "kube_system_sa", method: "GET", path: "/api/v1/pods", user: authn("system:serviceaccount:kube-system:foo", "system:serviceaccounts"), want: "kube-system-service-accounts"},
		{name: "kube_system_sa_lease", method: "GET", path: "/apis/coordination.k8s.io/v1/namespaces/x/leases/l", user: authn("system:serviceaccount:kube-system:foo", "system:serviceaccounts"), want: "system-leader-election"},
		{name: "kube_system_prefix_is_not_namespace", method: "GET", path: "/api/v1/pods", user: authn("system:serviceaccount:kube-systemx:foo", "system:serviceaccounts"), want: "service-accounts"},
		{name: "other_sa", method: "GET", path: "/api/v1/pods", user: authn("system:serviceaccount:ns:foo", "system:serviceaccounts"), want: "service-accounts"},
		{name: "plain_user", method: "GET", path: "/apis/g/v1/namespaces/n/things", user: authn("alice"), want: "global-default"},
		{name: "no_group_falls_back_to_catch_all", method: "GET", path: "/apis/g/v1/things", user: &filters.User{Name: "odd"}, want: "catch-all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tt.method, tt.path, nil)
			info, _ := filters.RequestInfoResolver{}.Resolve(r)
			if got := snap.classify(tt.user, info).fs.Metadata.Name; got != tt.want {
				t.Errorf("classified as %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	info := func(method, path string) *filters.RequestInfo {
		i, _ := filters.RequestInfoResolver{}.Resolve(httptest.NewRequest(method, path, nil))
		return i
	}
	tests := []struct {
		name string
		rule ResourcePolicyRule
		info *filters.RequestInfo
		want bool
	}{
		{name: "exact", rule: ResourcePolicyRule{Verbs: []string{"get"}, APIGroups: []string{"g"}, Resources: []string{"things"}, Namespaces: []string{"n"}},
			info: info("GET", "/apis/g/v1/namespaces/n/things/a"), want: true},
		{name: "other_namespace", rule: ResourcePolicyRule{Verbs: []string{"get"}, APIGroups: []string{"g"}, Resources: []string{"things"}, Namespaces: []string{"n"}},
			info: info("GET", "/apis/g/v1/namespaces/m/things/a"), want: false},
		{name: "cluster_scope_needed", rule: ResourcePolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}},
			info: info("GET", "/apis/g/v1/things"), want: false},
		{name: "cluster_scope_set", rule: ResourcePolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true},
			info: info("GET", "/apis/g/v1/things"), want: true},
		{name: "subresource", rule: ResourcePolicyRule{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"nodes/status"}, ClusterScope: true},
			info: info("PUT", "/api/v1/nodes/n1/status"), want: true},
		{name: "resource_without_subresource", rule: ResourcePolicyRule{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"nodes"}, ClusterScope: true},
			info: info("PUT", "/api/v1/nodes/n1/status"), want: false},
		{name: "wildcard_not_alone_is_literal", rule: ResourcePolicyRule{Verbs: []string{"*", "get"}, APIGroups: []string{"g"}, Resources: []string{"things"}, ClusterScope: true},
			info: info("DELETE", "/apis/g/v1/things/a"), want: false},
		{name: "list_verb", rule: ResourcePolicyRule{Verbs: []string{"list"}, APIGroups: []string{"g"}, Resources: []string{"things"}, ClusterScope: true},
			info: info("GET", "/apis/g/v1/things"), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := matchesResourceRule(&tt.rule, tt.info); got != tt.want {
				t.Errorf("match = %v, want %v", got, tt.want)
			}
		})
	}
	urls := []struct {
		rule []string
		path string
		want bool
	}{
		{[]string{"*"}, "/anything", true},
		{[]string{"/healthz"}, "/healthz", true},
		{[]string{"/healthz/*"}, "/healthz/etcd", true},
		{[]string{"/healthz/*"}, "/healthz", false},
		{[]string{"/healthz"}, "/healthzx", false},
		{[]string{"/apis/*"}, "/apis/g", true},
	}
	for _, u := range urls {
		if got := matchesNonResourceURL(u.rule, u.path); got != u.want {
			t.Errorf("nonResourceURLs %v on %s = %v, want %v", u.rule, u.path, got, u.want)
		}
	}
	subjects := []struct {
		name string
		s    Subject
		u    filters.User
		want bool
	}{
		{"user", Subject{Kind: SubjectKindUser, User: &UserSubject{Name: "a"}}, filters.User{Name: "a"}, true},
		{"user_all", Subject{Kind: SubjectKindUser, User: &UserSubject{Name: "*"}}, filters.User{Name: "b"}, true},
		{"group", Subject{Kind: SubjectKindGroup, Group: &GroupSubject{Name: "g"}}, filters.User{Name: "b", Groups: []string{"h", "g"}}, true},
		{"group_miss", Subject{Kind: SubjectKindGroup, Group: &GroupSubject{Name: "g"}}, filters.User{Name: "b"}, false},
		{"sa", Subject{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: "ns", Name: "x"}}, filters.User{Name: "system:serviceaccount:ns:x"}, true},
		{"sa_other", Subject{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: "ns", Name: "x"}}, filters.User{Name: "system:serviceaccount:ns:y"}, false},
		{"sa_all", Subject{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: "ns", Name: "*"}}, filters.User{Name: "system:serviceaccount:ns:y"}, true},
		{"sa_all_other_ns", Subject{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: "ns", Name: "*"}}, filters.User{Name: "system:serviceaccount:nsx:y"}, false},
	}
	for _, s := range subjects {
		if got := matchesASubject([]Subject{s.s}, &s.u); got != s.want {
			t.Errorf("subject %s = %v, want %v", s.name, got, s.want)
		}
	}
}

func TestDistinguisher(t *testing.T) {
	t.Parallel()
	u := &filters.User{Name: "alice"}
	info, _ := filters.RequestInfoResolver{}.Resolve(httptest.NewRequest("GET", "/apis/g/v1/namespaces/n1/things", nil))
	tests := []struct {
		name   string
		method *FlowDistinguisherMethod
		want   string
	}{
		{"by_user", &FlowDistinguisherMethod{Type: DistinguisherByUser}, "alice"},
		{"by_namespace", &FlowDistinguisherMethod{Type: DistinguisherByNamespace}, "n1"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		fs := &FlowSchema{Spec: FlowSchemaSpec{DistinguisherMethod: tt.method}}
		if got := distinguisher(fs, u, info); got != tt.want {
			t.Errorf("%s: distinguisher %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestShuffleSharding(t *testing.T) {
	t.Parallel()
	// Worked by hand: 1000 in radix (8, 7, 6) is remainders 0, 6, 5; each
	// card skips the ones dealt before it: 0, 7, 6.
	if got := Deal(1000, 8, 3, nil); !slices.Equal(got, []int{0, 7, 6}) {
		t.Errorf("Deal(1000, 8, 3) = %v, want [0 7 6]", got)
	}
	if a, b := FlowHash("fs", "alice"), FlowHash("fs", "alice"); a != b {
		t.Errorf("FlowHash not deterministic")
	}
	if FlowHash("fs", "alice") == FlowHash("fs", "bob") || FlowHash("fsa", "lice") == FlowHash("fs", "alice") {
		t.Errorf("FlowHash collides on different flows")
	}
	for _, deck := range []struct{ size, hand int }{{128, 6}, {64, 6}, {16, 4}, {8, 8}} {
		seen := map[int]int{}
		for i := range uint64(2000) {
			h := FlowHash("fs", string(rune('a'+i%26))+string(rune(i)))
			hand := Deal(h, deck.size, deck.hand, nil)
			if !slices.Equal(hand, Deal(h, deck.size, deck.hand, nil)) {
				t.Fatalf("Deal not deterministic")
			}
			sorted := slices.Clone(hand)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != deck.hand || sorted[0] < 0 || sorted[len(sorted)-1] >= deck.size {
				t.Fatalf("deck %d hand %d: bad hand %v", deck.size, deck.hand, hand)
			}
			for _, c := range hand {
				seen[c]++
			}
		}
		if len(seen) != deck.size {
			t.Errorf("deck %d: only %d queues ever dealt", deck.size, len(seen))
		}
	}
}
