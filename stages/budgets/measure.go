package budgets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage/errcode"
)

// Measured is what one target's release measures.
type Measured struct {
	Target         string
	Archive        string // the archive's path
	PayloadFiles   int64  // release.json's payload.files
	InstalledFiles int64  // the archive's regular files (its declaration)
	ArchiveBytes   int64  // the archive's size
	// Timing is the release's, from its build-info.json; HasTiming is
	// false when there is none (a release directory copied without it).
	Timing    Timing
	HasTiming bool
}

// StageShare is the part of the release's time a stage must take to be
// recorded: a tenth. Shorter stages vary more than they weigh.
const StageShare = 10

// FindSet returns the newest release set of distribution id (by the set
// file's modification time) in releases, the directory piship release
// writes (OUT/releases). No set is CONFIG_UNAVAILABLE saying to release
// first.
func FindSet(releases, id string) (*release.Sums, error) {
	ents, err := os.ReadDir(releases)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "%s: %v: make it readable", releases, err)
	}
	var best *release.Sums
	var bestTime int64
	for _, e := range ents {
		if !e.Type().IsRegular() || !release.IsSums(e.Name()) || !strings.HasPrefix(e.Name(), id+"-") {
			continue
		}
		s, err := release.ReadSums(filepath.Join(releases, e.Name()))
		if err != nil {
			return nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
		}
		if s.ID != id {
			continue // another distribution whose id starts with id-
		}
		info, err := e.Info()
		if err != nil {
			return nil, errcode.Newf(errcode.ConfigUnavailable, "%s: %v", s.Path, err)
		}
		if t := info.ModTime().UnixNano(); best == nil || t > bestTime || (t == bestTime && s.Path > best.Path) {
			best, bestTime = s, t
		}
	}
	if best == nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "no release of %s in %s (no %s-<version>%s): run piship release on the distribution first, then check its budgets",
			id, releases, id, release.SumsSuffix)
	}
	return best, nil
}

// MeasureSet measures every target of the set, in the set's order.
func MeasureSet(s *release.Sums) ([]Measured, error) {
	var ms []Measured
	for _, e := range s.Entries {
		m, err := Measure(s, e)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// Measure measures one target of the set: the archive beside the set,
// the release directory of the same name beside it (its release.json)
// and its build-info.json.
func Measure(s *release.Sums, e release.SumEntry) (Measured, error) {
	m := Measured{Target: e.Name.Target, Archive: s.Archive(e)}
	name := e.Name.ID + "-" + e.Name.Version + "-" + e.Name.Target
	missing := func(path string, err error) error {
		return errcode.Newf(errcode.ConfigUnavailable, "%s: %v: the release set %s names it; run piship release again to write the whole release", path, err, s.Path)
	}
	f, err := atomicfs.OpenRegular(m.Archive)
	if err != nil {
		return m, missing(m.Archive, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return m, missing(m.Archive, err)
	}
	m.ArchiveBytes = info.Size()
	r, err := archive.Open(f, archive.Limits{})
	if err != nil {
		return m, errcode.Errorf(errcode.IntegrityFailed, "%s: %w", m.Archive, err)
	}
	d := r.Declared()
	r.Close()
	if d == nil {
		return m, errcode.Newf(errcode.ConfigInvalid, "%s declares no file count (an archive of an older piship): release it again with this piship", m.Archive)
	}
	m.InstalledFiles = int64(d.Files)

	rjPath := filepath.Join(s.Dir(), name, "release.json")
	raw, err := atomicfs.ReadRegular(rjPath, 16<<20)
	if err != nil {
		return m, missing(rjPath, err)
	}
	md, err := releasejson.Parse(raw)
	if err != nil {
		return m, errcode.Newf(errcode.ConfigInvalid, "%s: %v", rjPath, err)
	}
	m.PayloadFiles = int64(md.Payload.Files)

	biPath := release.BuildInfoPath(s.Dir(), name)
	raw, err = atomicfs.ReadRegular(biPath, 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil // no timings to report
	}
	if err != nil {
		return m, missing(biPath, err)
	}
	m.Timing, err = timingOf(raw, e.Name.Target)
	if err != nil {
		return m, errcode.Newf(errcode.ConfigInvalid, "%s: %v: run piship release again to rewrite it", biPath, err)
	}
	m.HasTiming = true
	return m, nil
}

// buildInfoTiming is the part of build-info.json the timings come from.
type buildInfoTiming struct {
	RuntimeCache string `json:"runtimeCache"`
	Timing       struct {
		TotalMs int64 `json:"totalMs"`
		Stages  []struct {
			Name  string `json:"name"`
			Ms    int64  `json:"ms"`
			Cache string `json:"cache"`
		} `json:"stages"`
	} `json:"timing"`
}

// timingOf reads the release's total and the stages that took at least
// a StageShare of it, named without the target's module (another
// target's stages are left out).
func timingOf(raw []byte, target string) (Timing, error) {
	var bi buildInfoTiming
	if err := json.Unmarshal(raw, &bi); err != nil {
		return Timing{}, fmt.Errorf("not build-info JSON (%v)", err)
	}
	t := Timing{ReleaseMs: bi.Timing.TotalMs, RuntimeCache: bi.RuntimeCache}
	prefix := fmt.Sprintf("module.target[%q].", target)
	for _, s := range bi.Timing.Stages {
		name := strings.Replace(s.Name, prefix, "", 1)
		if s.Ms*StageShare < t.ReleaseMs || s.Ms == 0 || strings.Contains(name, "module.target[") {
			continue // short, or another target's
		}
		t.Stages = append(t.Stages, StageTiming{Name: name, Ms: s.Ms, Cache: s.Cache})
	}
	slices.SortFunc(t.Stages, func(a, b StageTiming) int { return strings.Compare(a.Name, b.Name) })
	return t, nil
}
