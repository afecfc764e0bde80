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
	out, err := ParseChecksums(sums)
	if err != nil {
		return nil, err
	}
	for p := range out {
		if !Checksummed(p) {
			return nil, fmt.Errorf("%s lists %s, a file it does not cover", ChecksumsName, p)
		}
	}
	out[ChecksumsName] = canon.SHA256Hex(sums)
	entries, err := ParseInventory(inv)
	if err != nil {
		return nil, err
	}
	for p, sum := range entries {
		out["payload/"+p] = sum
	}
	return out, nil
}

// ParseChecksums reads checksums.txt's lines, `<sha256>  <path>`, each a
// lowercase hex digest and a release path: path -> sha256. What a file
// claims, not the release rules' check of it (Check compares it with the
// files, its order included). The one parser of its lines.
func ParseChecksums(raw []byte) (map[string]string, error) {
	out := map[string]string{}
	text := strings.TrimSuffix(string(raw), "\n")
	if text == "" {
		return out, nil
	}
	for n, line := range strings.Split(text, "\n") {
		sum, p, ok := strings.Cut(line, "  ")
		if !ok || !canon.IsSHA256Hex(sum) || !ValidPath(p) {
			return nil, fmt.Errorf("%s line %d is not `<sha256>  <path>`", ChecksumsName, n+1)
		}
		out[p] = sum
	}
	return out, nil
}

// ParseInventory reads the payload inventory (InventoryPath): a JSON
// object of payload path -> lowercase hex sha256, each path a release
// path.
func ParseInventory(raw []byte) (map[string]string, error) {
	var entries map[string]string
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", InventoryPath, err)
	}
	for p, sum := range entries {
		if !canon.IsSHA256Hex(sum) || !ValidPath(p) {
			return nil, fmt.Errorf("%s: the entry %q is not a slash path with a sha256", InventoryPath, p)
		}
	}
	return entries, nil
}
