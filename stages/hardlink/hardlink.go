// Package hardlink holds the one answer to a failed hard link that the
// runtime cache's placement (stages/runtimecache), payload.LinkTree and the install's
// content store (stages/contentstore) share: copy this file, copy this and
// every later file, or fail. Linking is an optimisation in all three, so only a
// failure that says nothing about hard link support fails the operation.
package hardlink

// Fallback says how a caller answers a failed os.Link.
type Fallback int

const (
	Fail    Fallback = iota // a real error: fail the operation
	CopyOne                 // copy this file, keep linking (EMLINK)
	CopyAll                 // copy this file and every later one
)
