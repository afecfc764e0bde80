//go:build !linux && !darwin

package launch

import "io/fs"

// sysFingerprint has no change time here: size and modification time
// only, so a write that restores both is not noticed until doctor.
func sysFingerprint(fi fs.FileInfo, fp *fingerprint) {}
