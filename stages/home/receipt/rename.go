package receipt

import "piship.dev/piship/cache/atomicfs"

// WindowsRenameDelays is how long a Windows rename refused with EPERM,
// EBUSY or EACCES (a scanner or indexer holding a handle inside the tree)
// is retried: atomicfs.InstallDelays, 25+50+100+200+400+800 ms, about
// 1.6 s.
var WindowsRenameDelays = atomicfs.InstallDelays

// Renamer renames with a retry policy (see atomicfs.Renamer). The zero
// value renames once with os.Rename.
type Renamer = atomicfs.Renamer

// WindowsRenamer retries EPERM, EBUSY and EACCES (and, on Windows, sharing
// and lock violations) after each of WindowsRenameDelays.
func WindowsRenamer() Renamer { return atomicfs.WindowsRenamer(WindowsRenameDelays) }

// ImmediateRenamer fails at once: what every platform but Windows uses.
func ImmediateRenamer() Renamer { return atomicfs.ImmediateRenamer() }

// DefaultRenamer is WindowsRenamer on Windows and ImmediateRenamer elsewhere.
func DefaultRenamer() Renamer { return atomicfs.DefaultRenamer(WindowsRenameDelays) }
