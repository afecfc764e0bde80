package cache

import (
	"encoding/json"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
)

// The tool digest stamp. Hashing the piship executable (24 MB) costs
// ~25 ms, paid by every run with a cacheable stage and every build. The
// stamp <cache home>/tool-digest.json remembers the digest by the file's
// identity: device, inode, size, modification and change times in
// nanoseconds. Rewriting the file, or restoring its modification time
// afterwards, changes its change time, so a changed binary is hashed
// again; only a matching identity is trusted. The stamp has the trust of
// the cache home, like every cache entry. Platforms without a change time
// in os.FileInfo (fileIdentity returns false) always hash.

const (
	toolStampName   = "tool-digest.json"
	toolStampSchema = "piship-tool-digest/v1"
)

type toolStamp struct {
	Schema   string `json:"schema"`
	Path     string `json:"path"`
	Identity string `json:"identity"`
	Digest   string `json:"digest"`
}

func toolStampPath() string {
	home, err := Home(nil)
	if err != nil {
		return ""
	}
	return filepath.Join(home, toolStampName)
}

// stampedToolDigest returns the stamped digest of exe when the stamp
// names exe with its current identity id.
func stampedToolDigest(exe, id string) (string, bool) {
	p := toolStampPath()
	if id == "" || p == "" {
		return "", false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	var st toolStamp
	if json.Unmarshal(data, &st) != nil || st.Schema != toolStampSchema || st.Path != exe || st.Identity != id || len(st.Digest) != 64 {
		return "", false
	}
	return st.Digest, true
}

// writeToolStamp records exe's digest under its identity, through a
// temporary sibling and a rename; failures only cost the next run a hash.
func writeToolStamp(exe, id, digest string) {
	p := toolStampPath()
	if p == "" {
		return
	}
	data, err := json.Marshal(toolStamp{Schema: toolStampSchema, Path: exe, Identity: id, Digest: digest})
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	_ = atomicfs.WriteFile(p, data, 0o600, atomicfs.Options{Pattern: "." + toolStampName + ".tmp-*"})
}

// FileIdentity is path's device, inode, size, modification and change
// times, the identity the tool digest stamp trusts; false where the
// platform gives no change time (then compare contents instead).
func FileIdentity(path string) (string, bool) { return fileIdentity(path) }
