package audit

import (
	"reflect"
	"testing"

	"piship.dev/piship/stages/distribution"
)

func TestPackagesFromLock(t *testing.T) {
	var ids []string
	for _, p := range helloPackages(t) {
		if !p.Local || p.Bundled || p.Integrity == "" {
			t.Errorf("hello's %s is a vendored tarball: %+v", p.ID(), p)
		}
		ids = append(ids, p.ID())
	}
	if want := []string{"hello-banner@2.0.1", "hello-cli@1.0.0", "hello-format@1.2.0", "hello-greeting@0.3.0"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("hello: %v, want %v", ids, want)
	}

	pl, err := distribution.ParsePackageLock([]byte(`{"lockfileVersion": 3, "packages": {
		"": {"name": "root", "version": "1.0.0"},
		"node_modules/b": {"version": "2.0.0", "resolved": "https://registry.npmjs.org/b/-/b-2.0.0.tgz", "integrity": "sha512-Yg=="},
		"node_modules/a/node_modules/b": {"version": "1.0.0", "integrity": "sha512-YQ=="},
		"node_modules/a": {"version": "3.0.0", "integrity": "sha512-YWE="},
		"node_modules/a/node_modules/inner": {"version": "0.1.0", "inBundle": true},
		"node_modules/dev-only": {"version": "1.0.0", "dev": true},
		"node_modules/dev-opt": {"version": "1.0.0", "devOptional": true, "integrity": "sha512-ZA=="},
		"node_modules/alias": {"name": "real", "version": "4.0.0", "integrity": "sha512-cg=="},
		"node_modules/ws-pkg": {"resolved": "packages/ws-pkg", "link": true},
		"packages/ws-pkg": {"name": "ws-pkg", "version": "0.0.1"}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := PackagesFromLock(pl)
	want := []Package{
		{Name: "a", Version: "3.0.0", Path: "node_modules/a", Integrity: "sha512-YWE="},
		{Name: "b", Version: "1.0.0", Path: "node_modules/a/node_modules/b", Integrity: "sha512-YQ=="},
		{Name: "b", Version: "2.0.0", Path: "node_modules/b", Integrity: "sha512-Yg==", Resolved: "https://registry.npmjs.org/b/-/b-2.0.0.tgz"},
		{Name: "dev-opt", Version: "1.0.0", Path: "node_modules/dev-opt", Integrity: "sha512-ZA=="},
		{Name: "inner", Version: "0.1.0", Path: "node_modules/a/node_modules/inner", Bundled: true},
		{Name: "real", Version: "4.0.0", Path: "node_modules/alias", Integrity: "sha512-cg=="},
		{Name: "ws-pkg", Version: "0.0.1", Path: "node_modules/ws-pkg", Resolved: "packages/ws-pkg", Local: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("packages:\n%+v\nwant\n%+v", got, want)
	}
}
