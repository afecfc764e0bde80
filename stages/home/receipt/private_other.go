//go:build !unix

package receipt

import "io/fs"

// On Windows os.TempDir is the user's own (%TEMP% under the profile).
func privateTempName() string { return "piship" }

func ownedPrivately(fs.FileInfo) bool { return true }
