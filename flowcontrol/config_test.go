package flowcontrol

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestDefaultConfigurationIsValid(t *testing.T) {
	t.Parallel()
	d := DefaultConfiguration()
	var fsNames, plNames []string
	for _, fs := range d.FlowSchemas {
		if err := ValidateFlowSchema(&fs); err != nil {
			t.Errorf("default %v", err)
		}
		fsNames = append(fsNames, fs.Metadata.Name)
	}
	for _, pl := range d.PriorityLevels {
		if err := ValidatePriorityLevel(&pl); err != nil {
			t.Errorf("default %v", err)
		}
		plNames = append(plNames, pl.Metadata.Name)
	}
	slices.Sort(fsNames)
	slices.Sort(plNames)
	wantFS := []string{"catch-all", "exempt", "global-default", "kube-controller-manager", "kube-scheduler",
		"kube-system-service-accounts", "probes", "service-accounts", "system-leader-election", "system-node-high", "system-nodes"}
	wantPL := []string{"catch-all", "exempt", "global-default", "leader-election", "node-high", "system", "workload-high", "workload-low"}
	if !slices.Equal(fsNames, wantFS) {
		t.Errorf("flow schemas %v, want %v", fsNames, wantFS)
	}
	if !slices.Equal(plNames, wantPL) {
		t.Errorf("priority levels %v, want %v", plNames, wantPL)
	}
	if a, b := StableUID(KindFlowSchema, "exempt"), StableUID(KindFlowSchema, "exempt"); a != b || len(a) != 36 || a == StableUID(KindPriorityLevelConfiguration, "exempt") {
		t.Errorf("StableUID not stable and distinct: %q %q", a, b)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	const pl = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: p}
spec: {type: Limited, limited: {limitResponse: {type: Queue, queuing: {}}}}
`
	fsOf := func(spec string) string {
		return "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: f}\nspec: " + spec + "\n"
	}
	const rules = `rules: [{subjects: [{kind: Group, group: {name: g}}], nonResourceRules: [{verbs: [get], nonResourceURLs: ["/x/*"]}]}]`
	tests := []struct {
		name    string
		doc     string
		wantErr string // substring; "" means valid
		check   func(t *testing.T, c Configuration)
	}{
		{name: "defaults_applied", doc: pl, check: func(t *testing.T, c Configuration) {
			l := c.PriorityLevels[0].Spec.Limited
			if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || *l.LimitResponse.Queuing != (QueuingConfiguration{64, 8, 50}) {
				t.Errorf("defaults not applied: %+v %+v", l, l.LimitResponse.Queuing)
			}
			if c.PriorityLevels[0].Metadata.UID != StableUID(KindPriorityLevelConfiguration, "p") {
				t.Errorf("uid %q", c.PriorityLevels[0].Metadata.UID)
			}
		}},
		{name: "multi_document_and_list", doc: pl + "---\n" + `apiVersion: v1
kind: List
items:
- ` + strings.ReplaceAll(strings.TrimSpace(fsOf(`{priorityLevelConfiguration: {name: p}, `+rules+`}`)), "\n", "\n  "),
			check: func(t *testing.T, c Configuration) {
				if len(c.FlowSchemas) != 1 || len(c.PriorityLevels) != 1 || c.FlowSchemas[0].Spec.MatchingPrecedence != 1000 {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "unknown_field", doc: strings.Replace(pl, "type: Limited,", "type: Limited, bogus: 1,", 1), wantErr: `unknown field "bogus"`},
		{name: "wrong_api_version", doc: strings.Replace(pl, "/v1", "/v1beta3", 1), wantErr: "apiVersion"},
		{name: "unknown_kind", doc: "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: Pod\n", wantErr: `unsupported kind "Pod"`},
		{name: "precedence_too_high", doc: fsOf(`{priorityLevelConfiguration: {name: p}, matchingPrecedence: 10001, ` + rules + `}`), wantErr: "must not be greater than 10000"},
		{name: "precedence_one_not_exempt", doc: fsOf(`{priorityLevelConfiguration: {name: p}, matchingPrecedence: 1, ` + rules + `}`), wantErr: "only the schema named 'exempt'"},
		{name: "bad_distinguisher", doc: fsOf(`{priorityLevelConfiguration: {name: p}, distinguisherMethod: {type: ByGroup}, ` + rules + `}`), wantErr: "distinguisherMethod.type"},
		{name: "no_rules_in_rule", doc: fsOf(`{priorityLevelConfiguration: {name: p}, rules: [{subjects: [{kind: Group, group: {name: g}}]}]}`), wantErr: "at least one of resourceRules and nonResourceRules"},
		{name: "wildcard_with_others", doc: fsOf(`{priorityLevelConfiguration: {name: p}, rules: [{subjects: [{kind: User, user: {name: u}}], nonResourceRules: [{verbs: ["*", get], nonResourceURLs: ["*"]}]}]}`), wantErr: "if '*' is present"},
		{name: "bad_url_wildcard", doc: fsOf(`{priorityLevelConfiguration: {name: p}, rules: [{subjects: [{kind: User, user: {name: u}}], nonResourceURLs: [], nonResourceRules: [{verbs: [get], nonResourceURLs: ["/a*"]}]}]}`), wantErr: "unknown field"},
		{name: "bad_url_wildcard_suffix", doc: fsOf(`{priorityLevelConfiguration: {name: p}, rules: [{subjects: [{kind: User, user: {name: u}}], nonResourceRules: [{verbs: [get], nonResourceURLs: ["/a*"]}]}]}`), wantErr: "wildcard can only do suffix matching"},
		{name: "hand_larger_than_queues", doc: strings.Replace(pl, "queuing: {}", "queuing: {queues: 4, handSize: 5}", 1), wantErr: "should not be greater than queues"},
		{name: "entropy", doc: strings.Replace(pl, "queuing: {}", "queuing: {queues: 1000000, handSize: 5}", 1), wantErr: "required entropy bits"},
		{name: "lendable_over_100", doc: strings.Replace(pl, "limited: {", "limited: {lendablePercent: 101, ", 1), wantErr: "between 0 and 100"},
		{name: "catch_all_is_fixed", doc: strings.Replace(pl, "name: p", "name: catch-all", 1), wantErr: "spec of 'catch-all' must equal the fixed value"},
		{name: "exempt_may_change_exempt_fields", doc: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: exempt}
spec: {type: Exempt, exempt: {nominalConcurrencyShares: 10, lendablePercent: 50}}
`},
		{name: "exempt_must_be_exempt", doc: strings.Replace(pl, "name: p", "name: exempt", 1), wantErr: "type must be 'Exempt' if and only if name is 'exempt'"},
		{name: "mandatory_schema_is_fixed", doc: "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: exempt}\nspec: {priorityLevelConfiguration: {name: exempt}, matchingPrecedence: 1, " + rules + "}\n", wantErr: "spec of 'exempt' must equal the fixed value"},
		{name: "mandatory_schema_unchanged_is_valid", doc: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: catch-all}
spec:
  priorityLevelConfiguration: {name: catch-all}
  matchingPrecedence: 10000
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: "system:unauthenticated"}}, {kind: Group, group: {name: "system:authenticated"}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`},
		{name: "duplicate_name", doc: pl + "---\n" + pl, wantErr: "appears twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(tt.doc))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tt.check != nil {
					tt.check(t, c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidObject) {
				t.Fatalf("error %v, want ErrInvalidObject containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestAddFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want Config
	}{
		{name: "defaults", args: nil, want: Config{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200}},
		{name: "all_set", args: []string{"--enable-priority-and-fairness=false", "--max-requests-inflight=10",
			"--max-mutating-requests-inflight=5", "--flowcontrol-config-file=a.yaml", "--flowcontrol-config-file=b.yaml"},
			want: Config{Disabled: true, MaxRequestsInFlight: 10, MaxMutatingRequestsInFlight: 5, ConfigFiles: []string{"a.yaml", "b.yaml"}}},
		{name: "enable_explicitly", args: []string{"--enable-priority-and-fairness"}, want: Config{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var cfg Config
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			cfg.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if cfg.Disabled != tt.want.Disabled || cfg.MaxRequestsInFlight != tt.want.MaxRequestsInFlight ||
				cfg.MaxMutatingRequestsInFlight != tt.want.MaxMutatingRequestsInFlight || !slices.Equal(cfg.ConfigFiles, tt.want.ConfigFiles) {
				t.Errorf("got %+v, want %+v", cfg, tt.want)
			}
		})
	}
}
