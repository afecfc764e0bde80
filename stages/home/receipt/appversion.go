package receipt

import (
	"regexp"
	"strings"
)

// EnvAppVersion is the environment variable an application is given its
// release version in: the launcher sets it on every start of an installed
// copy (the receipt's version), and a release's smoke tests set it for the
// payload they run. An application that prints its version reads it here
// rather than repeating the version in its own package.json.
const EnvAppVersion = "PISHIP_APP_VERSION"

// VersionRef is how a smoke test's expect names the release version:
// expect = "^${version}$" in distribution.hcl.
const VersionRef = "${version}"

// ExpandExpect is expect with every VersionRef replaced by the release
// version, quoted as a regular expression (1.2.3 matches "1.2.3" only):
// what the release's smoke stage and the launcher's smoke start compile.
func ExpandExpect(expect, version string) string {
	if !strings.Contains(expect, VersionRef) {
		return expect
	}
	return strings.ReplaceAll(expect, VersionRef, regexp.QuoteMeta(version))
}
