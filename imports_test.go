package annex

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/annexapi/annex"

// stagePackages are the request stages of DESIGN.md: none may import another.
var stagePackages = []string{"authn", "authz", "admission", "flowcontrol", "audit"}

// rootImporters are the packages besides the root that may import the root:
// they sit above the Builder rather than under it. annextest starts a server
// from a Builder for users' tests; kubeflags turns a command line into
// Builder input.
func rootImporters() []string { return []string{"annextest", "kubeflags"} }

// importRule says what the library's non-test code in one package may import
// from this module. A nil allow list means anything but the forbidden ones.
type importRule struct {
	pkg      string
	stdOnly  bool     // nothing outside the standard library
	allow    []string // module packages allowed (prefix match on whole segments)
	forbid   []string // module packages forbidden
	noImport []string // any import path forbidden (e.g. net/http for storage)
}

func importRules() []importRule {
	rules := []importRule{
		{pkg: "meta", stdOnly: true},
		{pkg: "filters", allow: []string{"meta", "internal/uid", "internal/stack"}, forbid: nil},
		// internal/attrs is the write's attributes, shared by rest and admission so
		// neither imports the other: a leaf over meta and filters.
		{pkg: "internal/attrs", allow: []string{"meta", "filters"}},
		{pkg: "storage", noImport: []string{"net/http"}, forbid: []string{"filters", "rest", "watch", "authn", "authz", "admission", "flowcontrol", "audit"}},
		{pkg: "watch", forbid: []string{"rest", "authn", "authz", "admission", "flowcontrol", "audit"}},
		{pkg: "rest", forbid: []string{"watch", "authn", "authz", "admission", "flowcontrol", "audit", "storage/backend", "storage/bbolt", "storage/etcd"}},
		// Shared leaves and helpers that stages may use: they must not reach
		// back into a stage or the serving layers.
		// field is kube's field errors, over meta's Status causes; schema
		// reports its structural checks with it.
		{pkg: "field", allow: []string{"meta"}},
		{pkg: "schema", allow: []string{"field", "internal/jsondec"}},
		// cellib is Kubernetes' CEL libraries over cel-go: meta's name
		// validators for the format library, filters' User for the authz one.
		{pkg: "cellib", allow: []string{"meta", "filters"}},
		{pkg: "healthz", allow: []string{}},
		{pkg: "certs", allow: []string{}},
		{pkg: "kubeclient", allow: []string{"meta"}},
		// apiservice writes APIServices through kubeclient; version is the
		// /version document.
		{pkg: "apiservice", allow: []string{"kubeclient", "meta"}},
		{pkg: "version", stdOnly: true},
		// metrics also keeps the storage families (the backends' observer).
		{pkg: "metrics", allow: []string{"filters", "meta", "storage"}},
		// managedfields is server-side apply's engine over the schema: rest
		// uses it, and admission through the attributes.
		{pkg: "internal/managedfields", allow: []string{"meta", "schema", "internal/jsonscan", "internal/jsonenc"}},
	}
	for _, s := range stagePackages {
		var others []string
		for _, o := range stagePackages {
			if o != s {
				others = append(others, o)
			}
		}
		rules = append(rules, importRule{pkg: s, forbid: append(others, "rest", "watch", "storage")})
	}
	return rules
}

// TestImportRule enforces DESIGN.md's "rule that keeps it composable": the
// leaves import nothing of ours (beyond meta for filters, meta and filters
// for attrs), stage packages never import each other, storage knows nothing
// of HTTP, only the root package and rootImporters import the root, and no
// file of the library module imports k8s.io.
func TestImportRule(t *testing.T) {
	t.Parallel()
	imports := map[string][]string{} // package dir -> imports of its non-test files
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (name == "e2e" || name == "testdata" || strings.HasPrefix(name, ".") || name == "examples" || strings.HasPrefix(name, "readme-program-")) { // readme-program-*: readme_test.go's program, made while this runs
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(p, "k8s.io/") {
				t.Errorf("%s imports %s: the library module must not import k8s.io", path, p)
			}
			if !strings.HasSuffix(path, "_test.go") {
				dir := filepath.ToSlash(filepath.Dir(path))
				imports[dir] = append(imports[dir], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 2 {
		t.Fatalf("scanned only %d packages; is the test running from the module root?", len(imports))
	}
	for dir, imps := range imports {
		for _, p := range imps {
			checkRootImport(t, dir, p)
		}
		for _, rule := range importRules() {
			if dir != rule.pkg && !strings.HasPrefix(dir, rule.pkg+"/") {
				continue
			}
			for _, p := range imps {
				checkImport(t, dir, p, rule)
			}
		}
	}
}

// reporter is the part of *testing.T that checkImport uses, so the checker
// itself can be tested.
type reporter interface {
	Errorf(format string, args ...any)
}

type fakeT struct {
	failed bool
	msgs   []string
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.failed = true
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// checkRootImport reports an import of the root package by any package but
// the root and rootImporters (each exactly: not their subpackages).
func checkRootImport(t reporter, dir, p string) {
	if p == modulePath && dir != "." && !slices.Contains(rootImporters(), dir) {
		t.Errorf("package %s imports the root package; only the root may know every stage", dir)
	}
}

func checkImport(t reporter, dir, p string, rule importRule) {
	if slices.Contains(rule.noImport, p) {
		t.Errorf("package %s imports %s, which rule %q forbids", dir, p, rule.pkg)
	}
	own := strings.HasPrefix(p, modulePath+"/")
	std := !strings.Contains(strings.SplitN(p, "/", 2)[0], ".")
	if rule.stdOnly && !std {
		t.Errorf("package %s imports %s; it may import only the standard library", dir, p)
	}
	if !own {
		return
	}
	rel := strings.TrimPrefix(p, modulePath+"/")
	under := func(list []string) bool {
		return slices.ContainsFunc(list, func(a string) bool { return rel == a || strings.HasPrefix(rel, a+"/") })
	}
	// A package may import its own subpackages (storage -> storage/...).
	if rel == rule.pkg || strings.HasPrefix(rel, rule.pkg+"/") || strings.HasPrefix(rule.pkg, rel+"/") {
		if !under(rule.forbid) {
			return
		}
	}
	if rule.allow != nil && !under(rule.allow) {
		t.Errorf("package %s imports %s; rule %q allows only %v", dir, p, rule.pkg, rule.allow)
	}
	if under(rule.forbid) {
		t.Errorf("package %s imports %s, which rule %q forbids", dir, p, rule.pkg)
	}
}

// TestImportRuleCatchesViolations makes sure the rule checker is not vacuous.
func TestImportRuleCatchesViolations(t *testing.T) {
	t.Parallel()
	rules := importRules()
	find := func(pkg string) importRule {
		for _, r := range rules {
			if r.pkg == pkg {
				return r
			}
		}
		t.Fatalf("no rule for %s", pkg)
		return importRule{}
	}
	tests := []struct {
		name string
		dir  string
		imp  string
	}{
		{"stage_imports_stage", "authn", modulePath + "/authz"},
		{"stage_imports_storage", "authz", modulePath + "/storage"},
		{"meta_imports_third_party", "meta", "go.uber.org/zap"},
		{"filters_imports_storage", "filters", modulePath + "/storage"},
		{"storage_imports_http", "storage", "net/http"},
		{"storage_backend_imports_watch", "storage/bbolt", modulePath + "/watch"},
		{"rest_imports_admission", "rest", modulePath + "/admission"},
		{"schema_imports_meta", "schema", modulePath + "/meta"},
		{"kubeclient_imports_authn", "kubeclient", modulePath + "/authn"},
		{"attrs_imports_admission", "internal/attrs", modulePath + "/admission"},
		{"attrs_imports_storage", "internal/attrs", modulePath + "/storage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pkg := strings.SplitN(tc.dir, "/", 2)[0]
			if pkg == "internal" {
				pkg = tc.dir
			}
			ft := &fakeT{}
			checkImport(ft, tc.dir, tc.imp, find(pkg))
			if !ft.failed {
				t.Errorf("%s importing %s was not reported", tc.dir, tc.imp)
			}
		})
	}
	rootTests := []struct {
		name string
		dir  string
	}{
		{"rest_imports_root", "rest"},
		{"internal_imports_root", "internal/attrs"},
		{"annextest_subpackage_imports_root", "annextest/sub"},
		{"annextest_lookalike_imports_root", "annextestx"},
	}
	for _, tc := range rootTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ft := &fakeT{}
			checkRootImport(ft, tc.dir, modulePath)
			if !ft.failed {
				t.Errorf("%s importing the root package was not reported", tc.dir)
			}
		})
	}
	ok := &fakeT{}
	checkRootImport(ok, ".", modulePath)
	checkRootImport(ok, "annextest", modulePath)
	checkRootImport(ok, "kubeflags", modulePath)
	checkRootImport(ok, "rest", modulePath+"/storage")
	checkImport(ok, "rest", modulePath+"/storage", find("rest"))
	checkImport(ok, "filters", modulePath+"/meta", find("filters"))
	checkImport(ok, "storage/bbolt", modulePath+"/storage", find("storage"))
	checkImport(ok, "rest", modulePath+"/internal/attrs", find("rest"))
	checkImport(ok, "admission", modulePath+"/internal/attrs", find("admission"))
	checkImport(ok, "internal/attrs", modulePath+"/filters", find("internal/attrs"))
	if ok.failed {
		t.Errorf("allowed imports were reported: %v", ok.msgs)
	}
	if _, err := os.Stat("stages.go"); err != nil {
		t.Fatalf("test must run from the module root: %v", err)
	}
}
