package tuf

import (
	"encoding/json"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
)

// KeyNamesFile is the file beside metadata/ in which a repository keeps
// the names (the Key-Id of each PEM file, what `piship keygen --id`
// recorded) of the keys that signed it, by TUF key id: TUF metadata names
// a key only by its id, a sha256, and a publisher reading repo status
// wants "root" and "release-2026". Every command that signs (Init,
// AddReleases, Refresh, RotateRoot) adds the names of its keys. Clients
// never read it: it decides nothing, and a key not in it shows by its id.
const KeyNamesFile = "key-names.json"

// keyNamesDoc is KeyNamesFile's content.
type keyNamesDoc struct {
	Schema string            `json:"schema"`
	Names  map[string]string `json:"names"` // TUF key id -> name
}

const keyNamesSchema = "piship-tuf-key-names/v1"

// KeyNames reads the names of the repository's keys by TUF key id (empty
// when none were recorded).
func (r *Repository) KeyNames() map[string]string {
	var d keyNamesDoc
	b, err := atomicfs.ReadRegular(filepath.Join(r.Dir, KeyNamesFile), MaxRootBytes)
	if err != nil || json.Unmarshal(b, &d) != nil || d.Names == nil {
		return map[string]string{}
	}
	return d.Names
}

// rememberKeys adds the names of keys to KeyNamesFile. The names only
// label keys for people, so a name that cannot be recorded fails nothing:
// the key then shows by its TUF key id.
func (r *Repository) rememberKeys(sets ...[]Key) {
	names := r.KeyNames()
	changed := false
	for _, keys := range sets {
		for _, k := range keys {
			id, err := k.TUFKeyID()
			if err != nil || k.ID == "" || names[id] == k.ID {
				continue
			}
			names[id], changed = k.ID, true
		}
	}
	if !changed {
		return
	}
	b, err := json.MarshalIndent(keyNamesDoc{Schema: keyNamesSchema, Names: names}, "", "  ")
	if err != nil {
		return
	}
	_ = writeFile(filepath.Join(r.Dir, KeyNamesFile), append(b, '\n'))
}

// namesOf are the names of ids (sorted as ids), "" where none is known.
func namesOf(ids []string, names map[string]string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = names[id]
	}
	return out
}
