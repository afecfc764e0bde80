package distribution

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache/canon"
)

// SearchToolNames are the executables Pi manages itself (its
// tools-manager: fd and rg, looked up in its agent bin directory, else on
// PATH, else downloaded from GitHub at the first prompt). A search_tools
// block bundles them from their upstream release archives.
var SearchToolNames = []string{"fd", "rg"}

// SearchTool is one bundled search tool: a pinned upstream release archive
// per target, holding the executable (fd, rg; .exe on win32) somewhere in
// its tree, as upstream lays it out.
type SearchTool struct {
	Name string
	// Archives maps a target (linux-x64 ...) to its archive.
	Archives map[string]SearchArchive
}

// SearchArchive is one pinned release asset: an https:// URL of a .tar.gz,
// .tgz or .zip and the SHA-256 of its bytes (the digest upstream
// publishes).
type SearchArchive struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
}

// Format is the archive's format from its URL: "tar.gz" or "zip".
func (a SearchArchive) Format() string {
	if strings.HasSuffix(strings.ToLower(a.URL), ".zip") {
		return "zip"
	}
	return "tar.gz"
}

// Executable is the file name the tool has in its archive and in the
// payload's tools/ for a target.
func (t SearchTool) Executable(target string) string {
	if strings.HasPrefix(target, "win32-") {
		return t.Name + ".exe"
	}
	return t.Name
}

// searchTools decodes the search_tools block: fd = { "<target>" = { url,
// sha256 } ... } and rg likewise, each covering every release target.
func (dc *decoder) searchTools(blk *hcl.Block) {
	d := dc.d
	d.ranges["search_tools"] = blk.DefRange
	content := dc.content(blk.Body, searchToolsSchema, "the search_tools block", "search_tools.")
	d.SearchTools = map[string]SearchTool{}
	for _, name := range SearchToolNames {
		attr, ok := content.Attributes[name]
		if !ok {
			continue
		}
		key := "search_tools." + name
		d.ranges[key] = attr.Expr.Range()
		example := fmt.Sprintf(`%s = { "linux-x64" = { url = "https://github.com/.../%s-...-x86_64-unknown-linux-musl.tar.gz", sha256 = "<64 hex digits>" } }`, name, name)
		pairs, diags := hcl.ExprMap(attr.Expr)
		if diags.HasErrors() {
			dc.add(errDiag("Incorrect attribute value type", fmt.Sprintf("search_tools.%s must be a map of target to { url, sha256 }: %s.", name, example), attr.Expr.Range()))
			continue
		}
		t := SearchTool{Name: name, Archives: map[string]SearchArchive{}}
		for _, kv := range pairs {
			kval, kd := kv.Key.Value(nil)
			if kd.HasErrors() || kval.IsNull() || !kval.IsKnown() || kval.Type() != cty.String {
				dc.add(errDiag("Invalid target", "A search tool's archives are keyed by target, a string such as \"linux-x64\".", kv.Key.Range()))
				continue
			}
			target := kval.AsString()
			if _, err := ParseTarget(target); err != nil {
				dc.add(errDiag("Invalid target", fmt.Sprintf("search_tools.%s: %s", name, sentence(err.Error())), kv.Key.Range()))
				continue
			}
			if _, dup := t.Archives[target]; dup {
				dc.add(errDiag("Duplicate target", fmt.Sprintf("search_tools.%s names %s twice.", name, target), kv.Key.Range()))
				continue
			}
			tkey := key + "." + target
			d.ranges[tkey] = kv.Key.Range()
			if a, ok := dc.searchArchive(tkey, kv.Value); ok {
				t.Archives[target] = a
			}
		}
		d.SearchTools[name] = t
	}
	for _, name := range slices.Sorted(maps.Keys(d.SearchTools)) {
		if _, clash := d.Tools[name]; clash {
			dc.add(errDiag("Tool declared twice", fmt.Sprintf("%s is a search tool (bundled from search_tools.%s) and also a tools entry (%s); both would be tools/%s: keep one.", name, name, d.Pos("tools."+name), name), d.Range("search_tools."+name)))
		}
	}
}

// checkSearchTargets refuses a search tool with an archive for none of
// the release targets: no release could bundle it. A target without one
// ships without the tool, and its release says so (the search_tools
// stage). (One written but invalid has had its own diagnostic.)
func (dc *decoder) checkSearchTargets() {
	d := dc.d
	for _, name := range slices.Sorted(maps.Keys(d.SearchTools)) {
		pinned := false
		for _, target := range d.Release.Targets {
			_, written := d.ranges["search_tools."+name+"."+target]
			pinned = pinned || written
		}
		if !pinned && len(d.Release.Targets) > 0 {
			t := d.Release.Targets[0]
			dc.add(errDiag("Missing search tool archive", fmt.Sprintf("search_tools.%s has no archive for any release target (%s): add \"%s\" = { url = \"...\", sha256 = \"...\" } (the upstream release asset for that target); a target without one ships without the tool.", name, strings.Join(d.Release.Targets, ", "), t), d.Range("search_tools."+name)))
		}
	}
}

func (dc *decoder) searchArchive(key string, expr hcl.Expression) (SearchArchive, bool) {
	vals, ranges, ok := dc.stringFields(key, expr, []string{"url", "sha256"}, `{ url = "https://...", sha256 = "<64 hex digits>" }`, "url and sha256")
	if vals == nil {
		return SearchArchive{}, false
	}
	for _, field := range []string{"url", "sha256"} {
		v, have := vals[field]
		switch {
		case !have && ranges[field] == (hcl.Range{}):
			dc.add(errDiag("Missing required argument", fmt.Sprintf("%s requires %s.", key, field), expr.Range()))
			ok = false
		case !have:
		case field == "url" && !httpsArchiveURL(v):
			dc.add(errDiag("Invalid search tool archive", fmt.Sprintf("%s url %q: write the https:// URL of the upstream release asset, a .tar.gz, .tgz or .zip.", key, v), ranges[field]))
			ok = false
		case field == "sha256" && !canon.IsSHA256Hex(v):
			dc.add(errDiag("Invalid search tool digest", fmt.Sprintf("%s sha256 %q is not a SHA-256 digest: write the 64 lowercase hex digits of the archive (upstream publishes them; sha256sum prints them).", key, v), ranges[field]))
			ok = false
		}
	}
	return SearchArchive{URL: vals["url"], SHA256: vals["sha256"]}, ok
}

// lockSearchTools is the lock's record of the search tools: tool -> target
// -> archive; nil without a search_tools block.
func lockSearchTools(d *Distribution) map[string]map[string]SearchArchive {
	if len(d.SearchTools) == 0 {
		return nil
	}
	out := map[string]map[string]SearchArchive{}
	for name, t := range d.SearchTools {
		out[name] = maps.Clone(t.Archives)
	}
	return out
}
