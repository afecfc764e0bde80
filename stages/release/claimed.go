package release

import (
	"encoding/json"
	"fmt"
	"strings"

	"piship.dev/piship/cache/canon"
)

// Claimed is the digest of every file of an installed release directory
// as the release itself claims them, read from two small files instead
// of hashing the release: checksums.txt's lines, the payload inventory's
// entries (under payload/), and checksums.txt's own digest, computed.
// Claims are not proof: an update's delta starts from this listing
// (stages/delta.ListTree) and hashes every installed file it reads, so a
// file that is not what its release claims is still caught, before it is
// kept.
func Claimed(dir string) (map[string]string, error) {
	read := DirReader(dir)
	sums, err := read(ChecksumsName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ChecksumsName, err)
	}
	inv, err := read(InventoryPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", InventoryPath, err)
	}
	out := map[string]string{ChecksumsName: canon.SHA256Hex(sums)}
	for n, line := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		sum, p, ok := strings.Cut(line, "  ")
		if !ok || !canon.IsSHA256Hex(sum) || !ValidPath(p) || !Checksummed(p) {
			return nil, fmt.Errorf("%s line %d is not `<sha256>  <path>` of a file it covers", ChecksumsName, n+1)
		}
		out[p] = sum
	}
	var entries map[string]string
	if err := json.Unmarshal(inv, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", InventoryPath, err)
	}
	for p, sum := range entries {
		if !canon.IsSHA256Hex(sum) || !ValidPath(p) {
			return nil, fmt.Errorf("%s: the entry %q is not a slash path with a sha256", InventoryPath, p)
		}
		out["payload/"+p] = sum
	}
	return out, nil
}
