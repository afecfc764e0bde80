package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"piship.dev/piship/stages/home/receipt"
)

// InventoryName is the inventory's path inside a payload.
const InventoryName = "metadata/inventory.json"

// VerifyInventory checks a payload against metadata/inventory.json: the
// same set of regular files (the inventory itself aside), each with the
// recorded SHA-256, hashed by 8 readers. A difference is INTEGRITY_FAILED
// naming the first few. It is the check doctor runs (payload.Verify), kept
// here on the standard library for the launch path.
func VerifyInventory(ctx context.Context, payloadDir string) error {
	var want map[string]string
	data, err := os.ReadFile(filepath.Join(payloadDir, filepath.FromSlash(InventoryName)))
	if err == nil {
		err = json.Unmarshal(data, &want)
	}
	if err != nil {
		return receipt.Errorf(receipt.CodeIntegrity, "%s has no readable inventory: %v", payloadDir, err)
	}
	var files []string
	err = filepath.WalkDir(payloadDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(payloadDir, p)
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		if rel != InventoryName {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return receipt.Errorf(receipt.CodeIntegrity, "%s: %v", payloadDir, err)
	}
	sums := make([]string, len(files))
	if err := parallel(ctx, len(files), func(i int, buf []byte) error {
		s, err := hashFile(filepath.Join(payloadDir, filepath.FromSlash(files[i])), buf)
		sums[i] = s
		return err
	}); err != nil {
		return receipt.Errorf(receipt.CodeIntegrity, "%s: %v", payloadDir, err)
	}
	var diffs []string
	got := make(map[string]bool, len(files))
	for i, f := range files {
		got[f] = true
		if w, ok := want[f]; !ok {
			diffs = append(diffs, "unexpected "+f)
		} else if w != sums[i] {
			diffs = append(diffs, "changed "+f)
		}
	}
	for f := range want {
		if !got[f] {
			diffs = append(diffs, "missing "+f)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
	}
	return receipt.Errorf(receipt.CodeIntegrity, "%s does not match its inventory: %s", payloadDir, strings.Join(diffs, ", "))
}

// hashFile hashes the file at p, reading it through buf (a reader's own:
// io.Copy would allocate 32 KiB for every file).
func hashFile(p string, buf []byte) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	for {
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// parallel runs fn(0..n-1) on up to 8 goroutines, each with its own
// 64 KiB buffer, stopping at the first error or when ctx ends.
func parallel(ctx context.Context, n int, fn func(i int, buf []byte) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(8, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for {
				mu.Lock()
				if first == nil && ctx.Err() != nil {
					first = ctx.Err()
				}
				if first != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i, buf); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
