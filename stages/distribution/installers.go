package distribution

import (
	"fmt"
	"maps"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache/canon"
)

// Installers is the installers block: the end-user installer
// (cmd/piship-install) and launcher (cmd/piship-launch) a release ships in
// its release directory, beside install.sh, for each pinned target. They
// are piship's own builds (`make installers` cross-compiles them into
// bin/installers/<target>/ and writes bin/installers/installers.hcl, this
// block with their digests), taken from Source by digest:
// <source>/<target>/piship-install[.exe] and piship-launch[.exe].
type Installers struct {
	// Source is a directory relative to the distribution directory
	// (cleaned, slash-separated) or an https:// URL, the base of the
	// <target>/ directories.
	Source string `json:"source"`
	// SHA256 maps a target to the digests of its two binaries.
	SHA256 map[string]InstallerPins `json:"sha256"`
}

// InstallerPins are one target's pinned binaries: the installer and the
// launcher, each the 64 lowercase hex digits of its SHA-256.
type InstallerPins struct {
	Installer string `json:"installer"`
	Launcher  string `json:"launcher"`
}

// IsURL says whether the binaries are downloaded (else read from a
// directory of the distribution).
func (in *Installers) IsURL() bool { return strings.HasPrefix(in.Source, "https://") }

// InstallerSourceFiles are the file names a pinned target's binaries have
// under <source>/<target>/: what `make installers` writes.
func InstallerSourceFiles(target string) (installer, launcher string) {
	if strings.HasPrefix(target, "win32-") {
		return "piship-install.exe", "piship-launch.exe"
	}
	return "piship-install", "piship-launch"
}

// For returns the pins of target, false when the block pins none for it
// (or there is no block).
func (in *Installers) For(target string) (InstallerPins, bool) {
	if in == nil {
		return InstallerPins{}, false
	}
	p, ok := in.SHA256[target]
	return p, ok
}

// lockInstallers is the lock's copy of the block: nil without it.
func lockInstallers(d *Distribution) *Installers {
	if d.Installers == nil {
		return nil
	}
	return &Installers{Source: d.Installers.Source, SHA256: maps.Clone(d.Installers.SHA256)}
}

// installers decodes the installers block: source and sha256 = {
// "<target>" = { installer = "<hex>", launcher = "<hex>" } ... }. A target
// need not be a release target, nor every release target pinned: a
// release for a target without pins ships the host's binaries (its own
// target) or none, and says so.
func (dc *decoder) installers(blk *hcl.Block) {
	d := dc.d
	d.ranges["installers"] = blk.DefRange
	content := dc.content(blk.Body, installersSchema, "the installers block", "installers.")
	in := &Installers{SHA256: map[string]InstallerPins{}}
	ok := true
	if v, r, vok := dc.str(content.Attributes, "installers.source"); vok {
		src, msg := checkToolSource(v)
		if msg != "" {
			dc.add(errDiag("Invalid installers source", fmt.Sprintf("installers.source %q: %s It holds <target>/piship-install and <target>/piship-launch, as make installers writes bin/installers.", v, msg), r))
			ok = false
		}
		in.Source = src
	} else {
		ok = false
	}
	attr, written := content.Attributes["sha256"]
	if !written {
		return // required: its diagnostic is hcl's
	}
	d.ranges["installers.sha256"] = attr.Expr.Range()
	example := `sha256 = { "linux-x64" = { installer = "<64 hex digits>", launcher = "<64 hex digits>" } } (make installers writes it to bin/installers/installers.hcl)`
	pairs, diags := hcl.ExprMap(attr.Expr)
	if diags.HasErrors() {
		dc.add(errDiag("Incorrect attribute value type", "installers.sha256 must be a map of target to { installer, launcher }: "+example+".", attr.Expr.Range()))
		return
	}
	for _, kv := range pairs {
		kval, kd := kv.Key.Value(nil)
		if kd.HasErrors() || kval.IsNull() || !kval.IsKnown() || kval.Type() != cty.String {
			dc.add(errDiag("Invalid target", "installers.sha256 is keyed by target, a string such as \"linux-x64\".", kv.Key.Range()))
			ok = false
			continue
		}
		target := kval.AsString()
		if _, err := ParseTarget(target); err != nil {
			dc.add(errDiag("Invalid target", "installers.sha256: "+sentence(err.Error()), kv.Key.Range()))
			ok = false
			continue
		}
		if _, dup := in.SHA256[target]; dup {
			dc.add(errDiag("Duplicate target", fmt.Sprintf("installers.sha256 names %s twice.", target), kv.Key.Range()))
			ok = false
			continue
		}
		key := "installers.sha256." + target
		d.ranges[key] = kv.Key.Range()
		p, pok := dc.installerPins(key, kv.Value)
		if !pok {
			ok = false
			continue
		}
		in.SHA256[target] = p
	}
	if ok {
		d.Installers = in
	}
}

func (dc *decoder) installerPins(key string, expr hcl.Expression) (InstallerPins, bool) {
	vals, ranges, ok := dc.stringFields(key, expr, []string{"installer", "launcher"},
		`{ installer = "<64 hex digits>", launcher = "<64 hex digits>" }`, "installer and launcher (the sha256 of piship-install and piship-launch)")
	if vals == nil {
		return InstallerPins{}, false
	}
	for _, field := range []string{"installer", "launcher"} {
		v, have := vals[field]
		switch {
		case !have && ranges[field] == (hcl.Range{}):
			dc.add(errDiag("Missing required argument", fmt.Sprintf("%s requires %s: both binaries of a target are pinned (make installers builds both).", key, field), expr.Range()))
			ok = false
		case !have:
		case !canon.IsSHA256Hex(v):
			dc.add(errDiag("Invalid installer digest", fmt.Sprintf("%s %s %q is not a SHA-256 digest: write the 64 lowercase hex digits (make installers writes them to bin/installers/installers.hcl).", key, field, v), ranges[field]))
			ok = false
		}
	}
	return InstallerPins{Installer: vals["installer"], Launcher: vals["launcher"]}, ok
}
