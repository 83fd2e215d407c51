package meta

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestStorageVersionHash(t *testing.T) {
	t.Parallel()
	// Values served by real kube-apiservers.
	tests := []struct{ group, version, kind, want string }{
		{"", "v1", "Pod", "xPOwRZ+Yhw8="},
		{"apps", "v1", "Deployment", "8aSe+NMegvE="},
		{"", "v1", "ConfigMap", "qFsyl6wFWjQ="},
		{"", "v1", "Namespace", "Q3oi5N2YM8M="},
	}
	for _, tt := range tests {
		if got := StorageVersionHash(tt.group, tt.version, tt.kind); got != tt.want {
			t.Errorf("StorageVersionHash(%q, %q, %q) = %q, want %q", tt.group, tt.version, tt.kind, got, tt.want)
		}
	}
}

// The documents of wire.md §1.1 and §1.2, built from the types.
func TestLegacyDiscoveryJSON(t *testing.T) {
	t.Parallel()
	gv := GroupVersionForDiscovery{GroupVersion: "wardle.example.com/v1alpha1", Version: "v1alpha1"}
	group := APIGroup{Name: "wardle.example.com", Versions: []GroupVersionForDiscovery{gv}, PreferredVersion: gv}
	tests := []struct {
		name string
		doc  any
		want string
	}{
		{"group_list", APIGroupList{TypeMeta: TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []APIGroup{group}},
			`{"kind":"APIGroupList","apiVersion":"v1","groups":[
			  {"name":"wardle.example.com",
			   "versions":[{"groupVersion":"wardle.example.com/v1alpha1","version":"v1alpha1"}],
			   "preferredVersion":{"groupVersion":"wardle.example.com/v1alpha1","version":"v1alpha1"}}]}`},
		{"group", func() APIGroup { g := group; g.TypeMeta = TypeMeta{Kind: "APIGroup", APIVersion: "v1"}; return g }(),
			`{"kind":"APIGroup","apiVersion":"v1","name":"wardle.example.com",
			  "versions":[{"groupVersion":"wardle.example.com/v1alpha1","version":"v1alpha1"}],
			  "preferredVersion":{"groupVersion":"wardle.example.com/v1alpha1","version":"v1alpha1"}}`},
		{"resource_list", APIResourceList{
			TypeMeta:     TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "wardle.example.com/v1alpha1",
			APIResources: []APIResource{
				{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder",
					Verbs:      []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
					ShortNames: []string{"fl"}, Categories: []string{"all"}, StorageVersionHash: "aBcD1234XyZ="},
				{Name: "flunders/status", Namespaced: true, Kind: "Flunder", Verbs: []string{"get", "patch", "update"}},
				{Name: "flunders/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: []string{"get", "patch", "update"}},
			}},
			`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"wardle.example.com/v1alpha1",
			 "resources":[
			  {"name":"flunders","singularName":"flunder","namespaced":true,"kind":"Flunder",
			   "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
			   "shortNames":["fl"],"categories":["all"],"storageVersionHash":"aBcD1234XyZ="},
			  {"name":"flunders/status","singularName":"","namespaced":true,"kind":"Flunder","verbs":["get","patch","update"]},
			  {"name":"flunders/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]}
			 ]}`},
		{"api_versions", APIVersions{TypeMeta: TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "10.0.0.1:6443"}}},
			`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.0.0.1:6443"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, b, []byte(tt.want))
		})
	}
}

func TestAggregatedDiscoveryJSON(t *testing.T) {
	t.Parallel()
	flunder := &GroupVersionKind{Group: "wardle.example.com", Version: "v1alpha1", Kind: "Flunder"}
	doc := APIGroupDiscoveryList{
		TypeMeta: TypeMeta{Kind: KindAPIGroupDiscoveryList, APIVersion: DiscoveryGroupVersionV2},
		Items: []APIGroupDiscovery{{
			Metadata: ObjectMeta{Name: "wardle.example.com"},
			Versions: []APIVersionDiscovery{{
				Version: "v1alpha1",
				Resources: []APIResourceDiscovery{{
					Resource:         "flunders",
					ResponseKind:     flunder,
					Scope:            ScopeNamespace,
					SingularResource: "flunder",
					Verbs:            []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
					ShortNames:       []string{"fl"},
					Categories:       []string{"all"},
					Subresources: []APISubresourceDiscovery{
						{Subresource: "status", ResponseKind: flunder, Verbs: []string{"get", "patch", "update"}},
						{Subresource: "scale", ResponseKind: &GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: []string{"get", "patch", "update"}},
					},
				}},
				Freshness: DiscoveryFreshnessCurrent,
			}},
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, b, []byte(`{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},
	 "items":[{
	   "metadata":{"name":"wardle.example.com","creationTimestamp":null},
	   "versions":[{
	     "version":"v1alpha1",
	     "resources":[{
	        "resource":"flunders",
	        "responseKind":{"group":"wardle.example.com","version":"v1alpha1","kind":"Flunder"},
	        "scope":"Namespaced",
	        "singularResource":"flunder",
	        "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
	        "shortNames":["fl"],"categories":["all"],
	        "subresources":[
	          {"subresource":"status","responseKind":{"group":"wardle.example.com","version":"v1alpha1","kind":"Flunder"},"verbs":["get","patch","update"]},
	          {"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get","patch","update"]}]
	     }],
	     "freshness":"Current"}]}]}`))

	// Required fields stay when empty.
	b, err = json.Marshal(APIResourceDiscovery{Resource: "x", Verbs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"resource":"x","scope":"","singularResource":"","verbs":[]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestNegotiateAggregatedDiscovery(t *testing.T) {
	t.Parallel()
	const v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	const v2b1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
	tests := []struct{ name, accept, want string }{
		{"empty", "", ""},
		{"plain_json", "application/json", ""},
		{"client_go_1_32", v2 + "," + v2b1 + ",application/json", ContentTypeAggregatedDiscoveryV2},
		{"aggregator", v2 + "," + v2b1, ContentTypeAggregatedDiscoveryV2},
		{"v2beta1_only", v2b1, ContentTypeAggregatedDiscoveryV2Beta1},
		{"params_any_order_spaces", "application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io", ContentTypeAggregatedDiscoveryV2},
		{"json_first", "application/json," + v2, ""},
		{"q_prefers_v2", "application/json;q=0.5," + v2, ContentTypeAggregatedDiscoveryV2},
		{"q_zero", v2 + ";q=0", ""},
		{"unknown_version", "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json", ""},
		{"protobuf_then_json", "application/vnd.kubernetes.protobuf," + v2, ContentTypeAggregatedDiscoveryV2},
		{"wildcard", "*/*", ""},
	}
	for _, tt := range tests {
		if got := NegotiateAggregatedDiscovery(tt.accept); got != tt.want {
			t.Errorf("%s: NegotiateAggregatedDiscovery(%q) = %q, want %q", tt.name, tt.accept, got, tt.want)
		}
	}
	if ContentTypeAggregatedDiscoveryV2 != v2 || ContentTypeAggregatedDiscoveryV2Beta1 != v2b1 {
		t.Error("content type constants changed")
	}
}

func TestDiscoveryETag(t *testing.T) {
	t.Parallel()
	e := DiscoveryETag([]byte(`{}`))
	if len(e) != 130 || e[0] != '"' || e[129] != '"' || strings.ToUpper(e) != e {
		t.Errorf("ETag %s is not a quoted uppercase SHA-512", e)
	}
	// sha512("{}") begins with 27C74670.
	if !strings.HasPrefix(e, `"27C74670`) {
		t.Errorf("ETag %s", e)
	}
	if DiscoveryETag([]byte(`{"a":1}`)) == e {
		t.Error("different bodies, same ETag")
	}
}

func TestTableJSON(t *testing.T) {
	t.Parallel()
	tbl := Table{
		TypeMeta: TypeMeta{Kind: KindTable, APIVersion: MetaGroupVersion},
		Metadata: ListMeta{ResourceVersion: "12345"},
		ColumnDefinitions: []TableColumnDefinition{
			{Name: "Name", Type: ColumnTypeString, Format: ColumnFormatName, Description: "Name must be unique"},
			{Name: "Created At", Type: ColumnTypeDate, Description: "CreationTimestamp"},
			{Name: "Reference", Type: ColumnTypeString, Priority: 1},
		},
		Rows: []TableRow{
			{Cells: []any{"a", "2024-05-01T12:00:00Z", "x"}, Object: json.RawMessage(`{"kind":"PartialObjectMetadata"}`)},
			{Cells: []any{"b", "2024-05-01T12:00:00Z", 3}},
		},
	}
	b, err := json.Marshal(tbl)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, b, []byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"12345"},
	 "columnDefinitions":[
	   {"name":"Name","type":"string","format":"name","description":"Name must be unique","priority":0},
	   {"name":"Created At","type":"date","format":"","description":"CreationTimestamp","priority":0},
	   {"name":"Reference","type":"string","format":"","description":"","priority":1}],
	 "rows":[{"cells":["a","2024-05-01T12:00:00Z","x"],"object":{"kind":"PartialObjectMetadata"}},
	         {"cells":["b","2024-05-01T12:00:00Z",3],"object":null}]}`))

	// Later watch events carry "columnDefinitions": null.
	b, err = json.Marshal(Table{Rows: []TableRow{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata":{},"columnDefinitions":null,"rows":[]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
