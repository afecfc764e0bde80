package updatesource

import "piship.dev/piship/stages/semver"

// Channel versions come from release.json, which dist validated strictly,
// so they are read with the strict SemVer 2.0 reader.

// CheckUpgrade allows moving from current to candidate: nil when candidate
// is newer, ErrUpToDate when it is the same version, UPDATE_FAILED
// (ReasonDowngrade) "downgrade from X to Y refused" when it is older.
func CheckUpgrade(current, candidate string) error {
	cur, err := semver.Parse(current)
	if err != nil {
		return updateErr(ReasonVersion, "the installed version: %v", err)
	}
	cand, err := semver.Parse(candidate)
	if err != nil {
		return updateErr(ReasonVersion, "the channel's version: %v", err)
	}
	switch semver.Compare(cand, cur) {
	case 0:
		return ErrUpToDate
	case -1:
		return updateErr(ReasonDowngrade, "downgrade from %s to %s refused: the channel's newest release is older than the installed one (piship rollback returns to the previous release)", current, candidate)
	}
	return nil
}
