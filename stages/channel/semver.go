package channel

import "piship.dev/piship/stages/semver"

// Channel versions come from release.json, which dist validated strictly,
// so they are read with the strict SemVer 2.0 reader.

// CompareVersions orders two semantic versions by precedence: -1, 0 or 1.
// Build metadata is ignored (1.0.0+a equals 1.0.0+b).
func CompareVersions(a, b string) (int, error) {
	x, err := semver.Parse(a)
	if err != nil {
		return 0, err
	}
	y, err := semver.Parse(b)
	if err != nil {
		return 0, err
	}
	return semver.Compare(x, y), nil
}
