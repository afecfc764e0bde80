package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
)

// InventoryName is the inventory's path inside a payload.
const InventoryName = "metadata/inventory.json"

// VerifyInventory checks a payload against metadata/inventory.json: the
// same set of regular files (the inventory itself aside), each with the
// recorded SHA-256. A difference is INTEGRITY_FAILED naming the first few.
// It is the check doctor runs (payload.Verify), kept here on the standard
// library for the launch path. The walk hands each file to 8 hashing
// readers as it finds it, and the inventory is parsed meanwhile, so a
// start pays for the slowest of the three, not their sum.
func VerifyInventory(ctx context.Context, payloadDir string) error {
	var want map[string]string
	var wantErr error
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		data, err := atomicfs.ReadRegular(filepath.Join(payloadDir, filepath.FromSlash(InventoryName)), 0)
		if err == nil {
			err = json.Unmarshal(data, &want)
		}
		wantErr = err
	}()

	var (
		mu     sync.Mutex
		got    = map[string]string{}
		first  error
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		failed.Store(true)
	}
	paths := make(chan string, 256)
	for range verifyReaders {
		wg.Go(func() {
			buf := make([]byte, 64<<10)
			for rel := range paths {
				if failed.Load() {
					continue
				}
				sum, err := hashFile(filepath.Join(payloadDir, filepath.FromSlash(rel)), buf)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				got[rel] = sum
				mu.Unlock()
			}
		})
	}
	err := filepath.WalkDir(payloadDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if failed.Load() {
			return fs.SkipAll
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
			paths <- rel
		}
		return nil
	})
	close(paths)
	wg.Wait()
	<-parsed
	if err == nil {
		err = first
	}
	if wantErr != nil {
		return receipt.Errorf(receipt.CodeIntegrity, "%s has no readable inventory: %v", payloadDir, wantErr)
	}
	if err != nil {
		return receipt.Errorf(receipt.CodeIntegrity, "%s: %v", payloadDir, err)
	}
	var diffs []string
	for f, sum := range got {
		if w, ok := want[f]; !ok {
			diffs = append(diffs, "unexpected "+f)
		} else if w != sum {
			diffs = append(diffs, "changed "+f)
		}
	}
	for f := range want {
		if _, ok := got[f]; !ok {
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

// verifyReaders is how many goroutines hash a payload's files.
const verifyReaders = 8

// hashFile hashes the file at p, reading it through buf (a reader's own:
// io.Copy would allocate 32 KiB for every file).
func hashFile(p string, buf []byte) (string, error) {
	f, err := atomicfs.OpenRegular(p)
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
