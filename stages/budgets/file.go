// Package budgets holds a distribution's release budgets and checks a
// release against them: the seed's performance budgets, made a file
// beside distribution.hcl.
//
// # The file
//
// <distribution>/budgets.hcl has one target block per release target
// (linux-x64, darwin-arm64 ...), holding the three counted figures of that
// target's release and the timings it was recorded with:
//
//	target "linux-x64" {
//	  payload_files   = 15    # release.json's payload.files: the payload's inventory
//	  installed_files = 22    # the archive's regular files: what an install writes into apps/<id>/<version>/
//	  archive_bytes   = 10366 # the size of <id>-<version>-<target>.tar.zst
//	  timing {
//	    release_ms    = 1417
//	    runtime_cache = "miss"
//	    stage "npm_install module.qualify.stage.runtime_entry" {
//	      ms    = 618
//	      cache = "miss"
//	    }
//	  }
//	}
//
// The counted figures are deterministic for a given source, so they are
// gated: Check marks a figure more than 10% over its budget Over (the
// report's Err is BUDGET_EXCEEDED, naming each) and one more than 10%
// under it Under (reported, so the budget can be tightened, never a
// failure). A target of the release with no block says so and passes. The
// timings come from the release's build-info.json (the run's stage
// timings): the release's total and every stage that took at least a
// tenth of it. They vary by 20% run to run, so they are recorded and
// reported as ratios (this run's milliseconds over the recorded ones),
// never gated; a stage whose cache state differs from the recorded one (a
// hit against a recorded miss) is named and not compared.
//
// Record replaces the measured targets' blocks with what was measured and
// Format writes the file deterministically (targets and stages by name,
// hclwrite's layout), so `piship budgets check --record` after a
// deliberate change is a one-file diff a reviewer reads.
//
// Measure reads what `piship release` wrote (FindSet: the newest release
// set of the distribution in its releases directory); nothing here builds.
package budgets

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

// FileName is the budgets file's name in a distribution's directory.
const FileName = "budgets.hcl"

// maxFile bounds the budgets file read (it holds a few lines a target).
const maxFile = 1 << 20

// Budget is one target's budget.
type Budget struct {
	PayloadFiles   int64
	InstalledFiles int64
	ArchiveBytes   int64
	Timing         Timing
}

// Timing is a release's timings as recorded: reported against, never gated.
type Timing struct {
	ReleaseMs    int64
	RuntimeCache string // the runtime cache of the release: hit or miss ("" unknown)
	Stages       []StageTiming
}

// StageTiming is one stage's time, by its name without the target's
// module ("npm_install module.qualify.stage.runtime_entry").
type StageTiming struct {
	Name  string
	Ms    int64
	Cache string // hit, miss or none, as the timings say
}

// File is a budgets file: its path and a budget per target.
type File struct {
	Path    string
	Targets map[string]Budget
}

type fileHCL struct {
	Targets []targetHCL `hcl:"target,block"`
}

type targetHCL struct {
	Name           string     `hcl:"name,label"`
	PayloadFiles   int64      `hcl:"payload_files"`
	InstalledFiles int64      `hcl:"installed_files"`
	ArchiveBytes   int64      `hcl:"archive_bytes"`
	Timing         *timingHCL `hcl:"timing,block"`
	DefRange       hcl.Range  `hcl:",def_range"`
}

type timingHCL struct {
	ReleaseMs    int64      `hcl:"release_ms"`
	RuntimeCache string     `hcl:"runtime_cache,optional"`
	Stages       []stageHCL `hcl:"stage,block"`
}

type stageHCL struct {
	Name  string `hcl:"name,label"`
	Ms    int64  `hcl:"ms"`
	Cache string `hcl:"cache,optional"`
}

// Path is the budgets file of the distribution in dir.
func Path(dir string) string { return filepath.Join(dir, FileName) }

// Read reads the budgets file at path. A file that does not exist is an
// empty File (every target then has no budget) and exists is false.
func Read(path string) (f *File, exists bool, err error) {
	f = &File{Path: path, Targets: map[string]Budget{}}
	src, err := atomicfs.ReadRegular(path, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return f, false, nil
	}
	if err != nil {
		return nil, false, errcode.Newf(errcode.ConfigUnavailable, "%s: %v: make it a readable file, or remove it and run piship budgets check --record", path, err)
	}
	if err := f.parse(src); err != nil {
		return nil, true, err
	}
	return f, true, nil
}

// Parse reads a budgets file's bytes; path names it in errors, which are
// CONFIG_INVALID with every diagnostic of Decode.
func Parse(src []byte, path string) (*File, error) {
	f, diags := Decode(src, path)
	if diags.HasErrors() {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%s: %s: fix it, or rewrite it from a release with piship budgets check --record", path, diags.Error())
	}
	return f, nil
}

func (f *File) parse(src []byte) error {
	g, err := Parse(src, f.Path)
	if err != nil {
		return err
	}
	f.Targets = g.Targets
	return nil
}

// Decode reads a budgets file's bytes into a File, with positioned
// diagnostics (piship validate prints them): HCL syntax, unknown or
// missing attributes, a target name that is no release target, a target
// twice, a negative figure.
func Decode(src []byte, path string) (*File, hcl.Diagnostics) {
	f := &File{Path: path, Targets: map[string]Budget{}}
	hf, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return f, diags
	}
	var raw fileHCL
	if diags := gohcl.DecodeBody(hf.Body, nil, &raw); diags.HasErrors() {
		return f, diags
	}
	for _, t := range raw.Targets {
		bad := func(summary, detail string) {
			r := t.DefRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &r})
		}
		if _, err := distribution.ParseTarget(t.Name); err != nil {
			bad("Invalid target", fmt.Sprintf("target %q: %v", t.Name, err))
			continue
		}
		if _, dup := f.Targets[t.Name]; dup {
			bad("Duplicate target", fmt.Sprintf("target %q has two blocks", t.Name))
			continue
		}
		if t.PayloadFiles < 0 || t.InstalledFiles < 0 || t.ArchiveBytes < 0 {
			bad("Negative figure", fmt.Sprintf("target %q: a figure is negative", t.Name))
			continue
		}
		b := Budget{PayloadFiles: t.PayloadFiles, InstalledFiles: t.InstalledFiles, ArchiveBytes: t.ArchiveBytes}
		if t.Timing != nil {
			b.Timing = Timing{ReleaseMs: t.Timing.ReleaseMs, RuntimeCache: t.Timing.RuntimeCache}
			for _, s := range t.Timing.Stages {
				b.Timing.Stages = append(b.Timing.Stages, StageTiming{Name: s.Name, Ms: s.Ms, Cache: s.Cache})
			}
		}
		f.Targets[t.Name] = b
	}
	return f, diags
}

// header opens every file Format writes.
const header = `# Release budgets, checked by piship budgets check: a counted figure more than
# 10% over fails (BUDGET_EXCEEDED), one more than 10% under is reported. The
# timings are reported against, never gated. piship budgets check --record
# rewrites this file from the release.
`

// Format is the file's bytes: the header, then the targets by name, each
// timing's stages by name.
func (f *File) Format() []byte {
	w := hclwrite.NewEmptyFile()
	body := w.Body()
	for i, name := range slices.Sorted(maps.Keys(f.Targets)) {
		if i > 0 {
			body.AppendNewline()
		}
		b := f.Targets[name]
		tb := body.AppendNewBlock("target", []string{name}).Body()
		tb.SetAttributeValue("payload_files", cty.NumberIntVal(b.PayloadFiles))
		tb.SetAttributeValue("installed_files", cty.NumberIntVal(b.InstalledFiles))
		tb.SetAttributeValue("archive_bytes", cty.NumberIntVal(b.ArchiveBytes))
		tb.AppendNewline()
		tm := tb.AppendNewBlock("timing", nil).Body()
		tm.SetAttributeValue("release_ms", cty.NumberIntVal(b.Timing.ReleaseMs))
		if b.Timing.RuntimeCache != "" {
			tm.SetAttributeValue("runtime_cache", cty.StringVal(b.Timing.RuntimeCache))
		}
		stages := slices.Clone(b.Timing.Stages)
		slices.SortFunc(stages, func(a, b StageTiming) int { return strings.Compare(a.Name, b.Name) })
		for _, s := range stages {
			sb := tm.AppendNewBlock("stage", []string{s.Name}).Body()
			sb.SetAttributeValue("ms", cty.NumberIntVal(s.Ms))
			if s.Cache != "" {
				sb.SetAttributeValue("cache", cty.StringVal(s.Cache))
			}
		}
	}
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteByte('\n')
	out.Write(hclwrite.Format(w.Bytes()))
	return out.Bytes()
}

// Write writes the file (Format) atomically at f.Path.
func (f *File) Write() error {
	if err := atomicfs.WriteFileAll(f.Path, f.Format(), 0o644); err != nil {
		return errcode.Newf(errcode.ConfigUnavailable, "%s: %v: make its directory writable and record again", f.Path, err)
	}
	return nil
}

// Record sets the budget of every measured target to what was measured;
// the other targets' budgets stay.
func (f *File) Record(ms []Measured) {
	if f.Targets == nil {
		f.Targets = map[string]Budget{}
	}
	for _, m := range ms {
		f.Targets[m.Target] = Budget{PayloadFiles: m.PayloadFiles, InstalledFiles: m.InstalledFiles, ArchiveBytes: m.ArchiveBytes, Timing: m.Timing}
	}
}
