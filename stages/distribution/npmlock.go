package distribution

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/stage/errcode"
)

// PackageLock is the part of an npm package-lock.json (lockfileVersion 3)
// piship reads.
type PackageLock struct {
	LockfileVersion int
	Name            string
	Version         string
	// Packages is the lock's "packages" object, keyed by install path:
	// "" is the root project, "node_modules/a", "node_modules/a/node_modules/b",
	// and for workspaces and links the project-relative directory.
	Packages map[string]LockPackage
}

// LockPackage is one entry of "packages".
type LockPackage struct {
	// Name is set only when it differs from the install path (an alias
	// or a workspace).
	Name      string
	Version   string
	Resolved  string
	Integrity string
	// License is the SPDX expression ("" when the package declares none).
	License          string
	Dev              bool
	Optional         bool
	DevOptional      bool
	HasInstallScript bool
	Link             bool
	// InBundle marks a bundled dependency: it ships inside its parent's
	// tarball, so it has no resolved URL or integrity of its own.
	InBundle     bool
	OS           []string
	CPU          []string
	Libc         []string
	Dependencies map[string]string
	OptionalDeps map[string]string
	PeerDeps     map[string]string
	Bin          any
}

// PackageName is the name the package is published under: its "name" when
// the lock records one (an alias), else the last node_modules segment of
// its install path.
func PackageName(key string, p LockPackage) string {
	if p.Name != "" {
		return p.Name
	}
	i := strings.LastIndex(key, "node_modules/")
	if i < 0 {
		return path.Base(key)
	}
	return key[i+len("node_modules/"):]
}

type rawLock struct {
	Name            string                     `json:"name"`
	Version         string                     `json:"version"`
	LockfileVersion *int                       `json:"lockfileVersion"`
	Packages        map[string]json.RawMessage `json:"packages"`
}

type rawPackage struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Resolved             string            `json:"resolved"`
	Integrity            string            `json:"integrity"`
	License              json.RawMessage   `json:"license"`
	Dev                  bool              `json:"dev"`
	Optional             bool              `json:"optional"`
	DevOptional          bool              `json:"devOptional"`
	HasInstallScript     bool              `json:"hasInstallScript"`
	Link                 bool              `json:"link"`
	InBundle             bool              `json:"inBundle"`
	OS                   stringList        `json:"os"`
	CPU                  stringList        `json:"cpu"`
	Libc                 stringList        `json:"libc"`
	Dependencies         map[string]string `json:"dependencies"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
	PeerDependencies     map[string]string `json:"peerDependencies"`
	Bin                  any               `json:"bin"`
}

// stringList accepts a string or a list of strings (old manifests write
// "os": "linux").
type stringList []string

func (s *stringList) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

// license reads "MIT", {"type": "MIT"} (old manifests) and
// [{"type": "MIT"}, {"type": "Apache-2.0"}] ("MIT OR Apache-2.0").
func license(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	type typed struct {
		Type string `json:"type"`
	}
	var one typed
	if json.Unmarshal(raw, &one) == nil && one.Type != "" {
		return one.Type
	}
	var many []typed
	if json.Unmarshal(raw, &many) == nil {
		var types []string
		for _, t := range many {
			if t.Type != "" {
				types = append(types, t.Type)
			}
		}
		if len(types) > 1 {
			return "(" + strings.Join(types, " OR ") + ")"
		}
		return strings.Join(types, "")
	}
	return ""
}

// ReadPackageLock reads an npm package-lock.json and returns it with its
// raw bytes. Only lockfileVersion 3 (npm 7 and later, "packages" only) is
// accepted: older formats do not record what piship checks.
func ReadPackageLock(file string) (*PackageLock, []byte, error) {
	raw, err := atomicfs.ReadRegular(file, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil, errcode.Newf(errcode.ConfigInvalid, "%s does not exist: create it with `npm install --package-lock-only --ignore-scripts` in its directory", file)
		}
		return nil, nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
	}
	pl, err := ParsePackageLock(raw)
	if err != nil {
		return nil, nil, errcode.Newf(errcode.ConfigInvalid, "%s: %v", file, err)
	}
	return pl, raw, nil
}

// ParsePackageLock decodes package-lock.json bytes (lockfileVersion 3).
func ParsePackageLock(raw []byte) (*PackageLock, error) {
	var rl rawLock
	if err := json.Unmarshal(raw, &rl); err != nil {
		return nil, fmt.Errorf("not a package-lock.json: %v", err)
	}
	if rl.LockfileVersion == nil {
		return nil, fmt.Errorf("no lockfileVersion: not a package-lock.json written by npm")
	}
	if v := *rl.LockfileVersion; v != 3 {
		return nil, fmt.Errorf("lockfileVersion is %d; piship reads version 3: regenerate it with `npm install --package-lock-only --ignore-scripts --lockfile-version 3` (npm 7 or later)", v)
	}
	if rl.Packages == nil {
		return nil, fmt.Errorf(`lockfileVersion 3 without a "packages" object`)
	}
	pl := &PackageLock{LockfileVersion: 3, Name: rl.Name, Version: rl.Version, Packages: make(map[string]LockPackage, len(rl.Packages))}
	for key, msg := range rl.Packages {
		var rp rawPackage
		if err := json.Unmarshal(msg, &rp); err != nil {
			return nil, fmt.Errorf("packages[%q]: %v", key, err)
		}
		pl.Packages[key] = LockPackage{
			Name: rp.Name, Version: rp.Version, Resolved: rp.Resolved, Integrity: rp.Integrity,
			License: license(rp.License), Dev: rp.Dev, Optional: rp.Optional, DevOptional: rp.DevOptional,
			HasInstallScript: rp.HasInstallScript, Link: rp.Link, InBundle: rp.InBundle,
			OS: rp.OS, CPU: rp.CPU, Libc: rp.Libc,
			Dependencies: rp.Dependencies, OptionalDeps: rp.OptionalDependencies, PeerDeps: rp.PeerDependencies,
			Bin: rp.Bin,
		}
	}
	return pl, nil
}
