package footprint

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// pretranspile writes each TypeScript module of the closure g that the
// package's extensions import (every .ts/.tsx module but the entries, which
// Pi loads as the lock pins them) as JavaScript beside it, X.ts -> X.js,
// and returns how many it wrote. In the written files a relative import of
// another written module names its .js, so the chain stays JavaScript; an
// extensionless import finds the .js before the .ts. A module with a file
// of that name beside it already is left alone (nothing is overwritten).
// One esbuild build: every import external, nothing bundled.
func pretranspile(root string, p Package, g graph) (int, error) {
	entries := map[string]bool{}
	for _, e := range p.Entries {
		entries[e] = true
	}
	written := map[string]bool{} // module -> its .js will be written
	var points []string
	for _, m := range g.modules {
		ext := path.Ext(m)
		if entries[m] || (ext != ".ts" && ext != ".tsx") || strings.HasSuffix(m, ".d.ts") || !strings.HasPrefix(m, p.Dir+"/") {
			continue
		}
		js := strings.TrimSuffix(m, ext) + ".js"
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(js))); err == nil {
			continue
		}
		written[m] = true
		points = append(points, m)
	}
	if len(points) == 0 {
		return 0, nil
	}
	externals := api.Plugin{Name: "piship-pretranspile", Setup: func(b api.PluginBuild) {
		b.OnResolve(api.OnResolveOptions{Filter: ".*"}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
			if a.Kind == api.ResolveEntryPoint {
				return api.OnResolveResult{}, nil
			}
			spec := a.Path
			if strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") {
				from, err := filepath.Rel(root, a.ResolveDir)
				if err == nil {
					target := path.Join(filepath.ToSlash(from), spec)
					if written[target] {
						spec = strings.TrimSuffix(spec, path.Ext(spec)) + ".js"
					}
				}
			}
			return api.OnResolveResult{Path: spec, External: true}, nil
		})
	}}
	res := api.Build(api.BuildOptions{
		EntryPoints: points, Bundle: true, Write: true, Outdir: root, Outbase: root,
		Platform: api.PlatformNode, Format: api.FormatESModule, AbsWorkingDir: root,
		Plugins: []api.Plugin{externals}, LogLevel: api.LogLevelSilent, Charset: api.CharsetUTF8,
	})
	if len(res.Errors) > 0 {
		return 0, fmt.Errorf("footprint: pretranspiling %s: %s", p.Name, res.Errors[0].Text)
	}
	return len(res.OutputFiles), nil
}
