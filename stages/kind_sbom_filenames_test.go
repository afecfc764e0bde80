package stages

import (
	"os"
	"path/filepath"
	"testing"
)

// The SBOM names where the payload holds each package: its directory,
// the chunk esbuild put it into, the upstream bundle's entry, or nothing,
// never a path the payload does not hold.
func TestSBOMFileNamesFollowThePayload(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"node_modules/kept", "metadata"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	manifest := func(body string) {
		if err := os.WriteFile(filepath.Join(root, "metadata", "bundle.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest(`{"schema": "piship-bundle/v1", "entry": "node_modules/app/cli.js", "chunks": [{"path": "node_modules/app/cli.app-X.mjs", "bytes": 9, "packages": ["node_modules/app", "node_modules/gone"]}], "kept": [], "shims": []}`)
	name, err := payloadFileNames(root)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"node_modules/kept": "node_modules/kept", "node_modules/gone": "node_modules/app/cli.app-X.mjs", "node_modules/pruned": ""} {
		if got := name(key); got != want {
			t.Errorf("file name of %s = %q, want %q", key, got, want)
		}
	}
	manifest(`{"schema": "piship-bundle/v1", "entry": "node_modules/app/dist/bundle/cli.js", "chunks": [], "kept": [], "shims": [], "upstream": {"reason": "bundler output", "modules": 3, "packages": [], "located": []}}`)
	if name, err = payloadFileNames(root); err != nil {
		t.Fatal(err)
	}
	if got := name("node_modules/inlined"); got != "node_modules/app/dist/bundle/cli.js" {
		t.Errorf("a package upstream's bundle carries: %q", got)
	}
	manifest(`{not json`)
	if _, err := payloadFileNames(root); err == nil {
		t.Error("an unreadable bundle manifest was taken as none")
	}
	os.Remove(filepath.Join(root, "metadata", "bundle.json"))
	if name, err = payloadFileNames(root); err != nil || name("node_modules/kept") != "node_modules/kept" || name("node_modules/gone") != "" {
		t.Errorf("without a bundle: %v", err)
	}
}
