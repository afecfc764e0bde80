package pipelines

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// Source is one pipeline file: on disk or embedded in the binary.
type Source struct {
	Name string // shown in diagnostics
	Dir  string // where relative paths resolve
	Src  []byte
}

// isPath reports whether a PIPELINE argument names a file rather than a
// pipeline.
func isPath(arg string) bool {
	return strings.HasSuffix(arg, ".hcl") || strings.ContainsRune(arg, os.PathSeparator) || strings.Contains(arg, "/")
}

// Find resolves PIPELINE: a path to an .hcl file, or a name looked up as
// NAME.hcl in dir (--pipelines), then ./pipelines, then the pipelines
// embedded in the binary.
func Find(arg, dir string) (*Source, error) {
	if isPath(arg) {
		return ReadSource(arg)
	}
	var tried []string
	for _, d := range []string{dir, "pipelines"} {
		if d == "" {
			continue
		}
		p := filepath.Join(d, arg+".hcl")
		if _, err := os.Stat(p); err == nil {
			return ReadSource(p)
		}
		tried = append(tried, p)
	}
	if src, err := embedded(arg + ".hcl"); err == nil {
		return src, nil
	}
	tried = append(tried, embeddedPrefix+arg+".hcl")
	return nil, errcode.Newf(errcode.ConfigInvalid, "no pipeline %q (looked in %s); pass a file path or one of: %s",
		arg, strings.Join(tried, ", "), strings.Join(EmbeddedNames(), ", "))
}

// FindBuiltin is the pipeline built into the binary named name
// (--builtin): no file on disk is looked at.
func FindBuiltin(name string) (*Source, error) {
	if isPath(name) {
		return nil, errcode.Newf(errcode.UsageInvalid, "--builtin runs a pipeline built into piship, by its name; %s is a file: leave out --builtin, or name one of %s",
			name, strings.Join(EmbeddedNames(), ", "))
	}
	if src, err := embedded(name + ".hcl"); err == nil {
		return src, nil
	}
	return nil, errcode.Newf(errcode.ConfigInvalid, "no built-in pipeline %q; the built-in pipelines are %s (piship pipelines lists them)",
		name, strings.Join(EmbeddedNames(), ", "))
}

// FindForDistribution is the pipeline name (build, release) that runs on
// the distribution in dist: dist/pipelines/NAME.hcl when the distribution
// has one, as a project's own .goreleaser.yaml replaces the defaults, else
// the built-in one; builtin forces the built-in one. The working
// directory's ./pipelines does not count: where piship is started from
// must not change what a distribution's release is made by.
func FindForDistribution(name, dist string, builtin bool) (*Source, error) {
	if builtin {
		return FindBuiltin(name)
	}
	p := filepath.Join(dist, "pipelines", name+".hcl")
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return FindBuiltin(name)
	}
	// Anything else there (a directory, no permission) is reported, not
	// passed over for the built-in.
	return ReadSource(p)
}

// FindFile reads the pipeline file a run recorded (engine.PipelineFile):
// embedded:pipelines/NAME.hcl is the built-in one, anything else a path.
func FindFile(file string) (*Source, error) {
	if name, ok := strings.CutPrefix(file, embeddedPrefix); ok && !strings.HasPrefix(name, "modules/") {
		src, err := embedded(name)
		if err != nil {
			return nil, errcode.Newf(errcode.ConfigInvalid, "no built-in pipeline %s in this piship (%v); pass --pipeline the file that ran", file, err)
		}
		return src, nil
	}
	return ReadSource(file)
}

// embeddedPrefix names a built-in pipeline file: the Name of its Source,
// and the file a run of it records (engine.PipelineFile).
const embeddedPrefix = "embedded:pipelines/"

// embedded is the built-in pipeline file name (NAME.hcl); its relative
// paths resolve against the working directory.
func embedded(name string) (*Source, error) {
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		return nil, err
	}
	cwd, _ := os.Getwd()
	return &Source{Name: embeddedPrefix + name, Dir: cwd, Src: b}, nil
}

// ReadSource reads a pipeline file from disk.
func ReadSource(path string) (*Source, error) {
	b, err := atomicfs.ReadRegular(path, 0)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "cannot read pipeline file: %v", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return &Source{Name: path, Dir: filepath.Dir(abs), Src: b}, nil
}

// EmbeddedNames lists the embedded pipelines, sorted.
func EmbeddedNames() []string { return embeddedHCL(".") }

// embeddedHCL lists the names of the .hcl files of an embedded directory,
// without the extension, sorted.
func embeddedHCL(dir string) []string {
	entries, _ := fs.ReadDir(FS, dir)
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".hcl"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Parse parses src against kinds (stages.Default for piship, the consumer
// kinds for the end-user installer).
func (src *Source) Parse(kinds *stage.Registry) ([]*graph.Graph, map[string]*hcl.File, hcl.Diagnostics) {
	return graph.ParseWith(src.Src, src.Name, src.Dir, graph.Options{Kinds: kinds, Builtin: BuiltinModule})
}

// ParseModule validates src as a module file (graph.IsModuleFile), for
// piship validate.
func (src *Source) ParseModule(kinds *stage.Registry) (*graph.Graph, map[string]*hcl.File, hcl.Diagnostics) {
	return graph.ParseModule(src.Src, src.Name, src.Dir, graph.Options{Kinds: kinds, Builtin: BuiltinModule})
}

// modulePrefix names a built-in module's file, as diagnostics show it.
const modulePrefix = embeddedPrefix + "modules/"

// BuiltinModule is the built-in module name (`source = "builtin:NAME"`).
func BuiltinModule(name string) ([]graph.ModuleFile, bool) {
	b, err := fs.ReadFile(FS, "modules/"+name+".hcl")
	if err != nil {
		return nil, false
	}
	return []graph.ModuleFile{{Name: modulePrefix + name + ".hcl", Src: b}}, true
}

// ModuleNames lists the built-in modules, sorted.
func ModuleNames() []string { return embeddedHCL("modules") }

// LoadOne parses src and requires exactly one pipeline in it. Diagnostics
// go to stderr (see WriteDiags); ok is false when there were errors.
func LoadOne(stderr io.Writer, getenv func(string) string, kinds *stage.Registry, src *Source) (*graph.Graph, bool) {
	graphs, files, diags := src.Parse(kinds)
	WriteDiags(stderr, getenv, files, diags)
	if diags.HasErrors() {
		n := errorCount(diags)
		printFailure(stderr, errcode.ConfigInvalid, "%s has %s; fix %s and run again", src.Name, canon.Count(n, "error"), itThem(n))
		return nil, false
	}
	if len(graphs) != 1 {
		names := make([]string, len(graphs))
		for i, g := range graphs {
			names[i] = g.Name
		}
		printFailure(stderr, errcode.ConfigInvalid, "%s holds %s (%s); a runnable file holds exactly one", src.Name, canon.Count(len(graphs), "pipeline"), strings.Join(names, ", "))
		return nil, false
	}
	return graphs[0], true
}

// Collect expands validate's arguments: files and directories (every
// .hcl file in them). With none, and without builtin, it is the current
// directory's .hcl files and ./pipelines's (what `piship run NAME` looks
// up), as terraform validate takes the current directory; finding none
// there is CONFIG_INVALID. builtin adds the pipelines built into the
// binary.
func Collect(args []string, builtin bool) ([]*Source, error) {
	var out []*Source
	if builtin {
		for _, n := range EmbeddedNames() {
			s, err := Find(n, "")
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		if len(args) == 0 {
			return out, nil
		}
	}
	if len(args) == 0 {
		for _, dir := range []string{".", "pipelines"} {
			if info, err := os.Stat(dir); err != nil || !info.IsDir() {
				continue
			}
			s, err := dirSources(dir)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		if len(out) == 0 {
			cwd, _ := os.Getwd()
			return nil, errcode.Newf(errcode.ConfigInvalid, "no pipeline files (*.hcl) in %s or its pipelines/ directory: "+
				"run piship validate in a directory that has them, pass files or directories, or --builtin for the built-in pipelines", cwd)
		}
		return out, nil
	}
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			return nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
		}
		if info.IsDir() {
			s, err := dirSources(a)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
			continue
		}
		s, err := ReadSource(a)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func dirSources(dir string) ([]*Source, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	var out []*Source
	for _, m := range matches {
		s, err := ReadSource(m)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
