package payload

import "path/filepath"

// Stamp is a build's stamp, <out>/<id>.piship-build.json: what decided the payload's bytes.
type Stamp struct {
	Key        string `json:"key"`
	RuntimeKey string `json:"runtimeKey"`
	Inventory  string `json:"inventory"` // sha256 of metadata/inventory.json
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
}

// StampPath is where the stamp of a build stands.
func StampPath(out, id string) string { return filepath.Join(out, id+".piship-build.json") }
