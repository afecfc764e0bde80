package home

import (
	"fmt"
	"strings"

	"piship.dev/piship/stages/stage/errcode"
)

// DamageError is the INTEGRITY_FAILED error of a report that found
// damage: what was found and what was repaired, and what to do.
func DamageError(rep DoctorReport) error {
	var found, done []string
	for _, f := range rep.Found {
		found = append(found, f.String())
	}
	for _, d := range rep.Repaired {
		done = append(done, d.Code+" "+d.Path+": "+d.Detail)
	}
	msg := fmt.Sprintf("%s: doctor found %d problem(s): %s", rep.ID, len(rep.Found), strings.Join(found, "; "))
	if len(done) > 0 {
		msg += "; repaired: " + strings.Join(done, "; ")
	}
	return errcode.Newf(errcode.IntegrityFailed, "%s; run piship doctor %s again to check, and reinstall the release for what was not repaired", msg, rep.ID)
}
