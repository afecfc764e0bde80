package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
)

// The bundled search tools at launch.
//
// Pi looks for fd and rg in its agent bin directory (getBinDir:
// $PI_CODING_AGENT_DIR/bin, else ~/.pi/agent/bin), then on PATH, and
// otherwise downloads them from GitHub at the first prompt, which its
// interactive start then waits for (24 to 30 s, the seed measured). A
// release that bundles them (search_tools) has them in payload/tools/;
// each start makes sure the agent bin directory holds exactly those bytes:
//
//   - a receipt beside them, .piship-search-tools.json, records each
//     executable's sha256, size, modification and change times and file
//     index (device, inode) as this launcher last placed or checked it;
//   - a start whose fingerprint matches the receipt for the digest the
//     install recorded (the installation receipt) reads no tool bytes;
//   - any other state (missing, replaced, written, or written with its
//     modification time put back, which still moves the change time)
//     brings the full digest check back: a file of the right digest is
//     re-recorded, anything else is replaced by the payload's copy,
//     itself hashed while it is copied (a payload copy that is not the
//     installed one stops the start: INTEGRITY_FAILED);
//   - a file there that the receipt does not record and that is not the
//     bundled one (Pi's own download, the user's) is left alone: Pi uses
//     it and downloads nothing.
//
// The copy goes to a sibling temporary file renamed over the target, and
// the receipt is written the same way, so concurrent starts each leave a
// whole file and at worst a receipt that the next start re-checks.
//
// A Pi distribution that bundles neither tool, when neither is in the
// agent bin directory or on PATH, runs Pi offline for that start
// (PI_OFFLINE=1, note tool_downloads_deferred): the start does not wait
// for a download. PISHIP_ALLOW_TOOL_DOWNLOAD=1 gives Pi its own download
// back.

// ToolsReceiptName is the search tools' receipt in the agent bin directory.
const ToolsReceiptName = ".piship-search-tools.json"

// ToolsReceiptSchema identifies its format.
const ToolsReceiptSchema = "piship-search-tools/v1"

// EnvAllowToolDownload=1 lets Pi download missing search tools itself.
const EnvAllowToolDownload = "PISHIP_ALLOW_TOOL_DOWNLOAD"

// NoteToolDownloadsDeferred is the timing note of a start run offline
// because no search tool was available.
const NoteToolDownloadsDeferred = "tool_downloads_deferred"

// piRuntimes are the npm packages of Pi whose entry a distribution runs;
// the search tools are theirs.
var piRuntimes = []string{"@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"}

// IsPi reports whether a release's entry is Pi's.
func IsPi(entry string) bool {
	for _, p := range piRuntimes {
		if strings.Contains(entry, "node_modules/"+p+"/") {
			return true
		}
	}
	return false
}

// AgentBinDir is Pi's getBinDir for the environment getenv.
func AgentBinDir(getenv func(string) string) (string, error) {
	dir := getenv("PI_CODING_AGENT_DIR")
	home := getenv("HOME")
	if runtime.GOOS == "windows" && home == "" {
		home = getenv("USERPROFILE")
	}
	switch {
	case dir == "~":
		dir = home
	case strings.HasPrefix(dir, "~/"):
		dir = filepath.Join(home, dir[2:])
	case dir == "":
		if home == "" {
			return "", errors.New("no HOME to find Pi's agent directory under (set HOME or PI_CODING_AGENT_DIR)")
		}
		dir = filepath.Join(home, ".pi", "agent")
	}
	return filepath.Join(dir, "bin"), nil
}

// fingerprint is what a start compares instead of reading a tool's bytes.
type fingerprint struct {
	Size       int64  `json:"size"`
	ModTime    int64  `json:"modTimeNs"`
	ChangeTime int64  `json:"changeTimeNs"`
	Device     uint64 `json:"device"`
	Inode      uint64 `json:"inode"`
}

type toolRecord struct {
	SHA256 string `json:"sha256"`
	fingerprint
}

type toolsReceipt struct {
	Schema string                `json:"schema"`
	Tools  map[string]toolRecord `json:"tools"`
}

// SearchToolsResult is what preparing the search tools did.
type SearchToolsResult struct {
	// BinDir is the agent bin directory ("" when nothing was placed).
	BinDir string
	// Checked are tools whose fingerprint matched (no bytes read);
	// Rehashed those hashed in full and found right; Placed those copied
	// from the payload; Foreign files left alone.
	Checked, Rehashed, Placed, Foreign []string
	// BytesRead counts the tool bytes read (hashing and copying).
	BytesRead int64
	// Deferred is set when the start runs Pi offline for want of tools.
	Deferred bool
	// Unavailable says what could not be placed or recorded (a read-only
	// or full agent directory): the start goes on without it.
	Unavailable []string
}

// PrepareSearchTools makes the agent bin directory hold the release's
// bundled search tools, or decides the deferred path (see above). It
// returns environment entries for node.
func PrepareSearchTools(id string, rel *receipt.Release, getenv func(string) string) (SearchToolsResult, []string, error) {
	var res SearchToolsResult
	if !IsPi(rel.Entry) {
		return res, nil, nil
	}
	bin, err := AgentBinDir(getenv)
	if err != nil {
		return res, nil, nil // Pi itself will fail the same way; not ours to refuse
	}
	if len(rel.SearchTools) == 0 {
		if ToolDownloadsDeferred(getenv, bin) {
			res.Deferred = true
			return res, []string{"PI_OFFLINE=1"}, nil
		}
		return res, nil, nil
	}
	res.BinDir = bin
	rpath := filepath.Join(bin, ToolsReceiptName)
	rc := readToolsReceipt(rpath)
	changed := false
	for _, t := range rel.SearchTools {
		exe, dst := agentToolPath(bin, t)
		state, fp, n := inspectTool(rc, exe, dst, t.SHA256, true)
		res.BytesRead += n
		switch state {
		case toolCurrent:
			res.Checked = append(res.Checked, exe)
			continue
		case toolBundled:
			res.Rehashed = append(res.Rehashed, exe)
			rc.Tools[exe], changed = toolRecord{SHA256: t.SHA256, fingerprint: fp}, true
			continue
		case toolForeign:
			res.Foreign = append(res.Foreign, exe)
			continue
		}
		src := filepath.Join(rel.Payload, filepath.FromSlash(t.Path))
		n, err := placeTool(src, dst, t.SHA256)
		res.BytesRead += n
		if err != nil {
			var e *receipt.Error
			if errors.As(err, &e) {
				return res, nil, receipt.Errorf(e.Code, "%s %s: %s", id, rel.Version, e.Msg)
			}
			// A directory that refuses the copy (read-only, full) does not
			// stop the start: Pi goes on without the tool, as it would
			// have without piship; the note says why.
			res.Unavailable = append(res.Unavailable, fmt.Sprintf("%s: %v", exe, err))
			continue
		}
		if fp, err = statFingerprint(dst); err != nil {
			res.Unavailable = append(res.Unavailable, fmt.Sprintf("%s: %v", exe, err))
			continue
		}
		res.Placed = append(res.Placed, exe)
		rc.Tools[exe], changed = toolRecord{SHA256: t.SHA256, fingerprint: fp}, true
	}
	if changed {
		rc.Schema = ToolsReceiptSchema
		if err := writeRecord(rpath, rc); err != nil {
			// The next start checks the tools in full again; not a reason
			// to stop this one.
			res.Unavailable = append(res.Unavailable, fmt.Sprintf("%s: %v", ToolsReceiptName, err))
		}
	}
	return res, nil, nil
}

// toolState is what a start finds of one bundled tool in the agent bin
// directory, and what it does about it.
type toolState int

const (
	// toolCurrent: the fingerprint is the receipt's for the bundled
	// digest; no byte is read and nothing is done.
	toolCurrent toolState = iota
	// toolBundled: hashed in full, the bundled bytes; recorded again.
	toolBundled
	// toolForeign: a file piship did not place (the receipt does not
	// record it) with other bytes: Pi's own download or the user's, which
	// Pi uses; left alone.
	toolForeign
	// toolStale: missing, or placed by piship and changed since: placed
	// again from the payload.
	toolStale
)

// readToolsReceipt reads the agent bin directory's receipt; anything
// unreadable or of another schema is an empty one (every tool is then
// hashed in full).
func readToolsReceipt(path string) toolsReceipt {
	var rc toolsReceipt
	if !readRecord(path, &rc) || rc.Schema != ToolsReceiptSchema {
		rc = toolsReceipt{}
	}
	if rc.Tools == nil {
		rc.Tools = map[string]toolRecord{}
	}
	return rc
}

// agentToolPath is where a bundled tool goes in the agent bin directory
// bin: its executable's name, and that name in bin.
func agentToolPath(bin string, t receipt.SearchTool) (exe, dst string) {
	exe = filepath.Base(filepath.FromSlash(t.Path))
	return exe, filepath.Join(bin, exe)
}

// inspectTool is the one rule for the bundled tool exe at dst whose digest
// is want, given the agent bin directory's receipt: its state, its
// fingerprint (when it exists) and how many of its bytes were read.
// Launch acts on it, trusting a matching fingerprint; doctor reports it,
// hashing every tool (fingerprints=false): a rewrite that forged a
// fingerprint (on Windows, without a change time) is caught there.
func inspectTool(rc toolsReceipt, exe, dst, want string, fingerprints bool) (toolState, fingerprint, int64) {
	rec, recorded := rc.Tools[exe]
	fp, err := statFingerprint(dst)
	if err != nil {
		return toolStale, fp, 0
	}
	if fingerprints && recorded && rec.SHA256 == want && rec.fingerprint == fp {
		return toolCurrent, fp, 0
	}
	sum, n, err := hashPath(dst)
	switch {
	case err == nil && sum == want:
		return toolBundled, fp, n
	case !recorded:
		return toolForeign, fp, n
	}
	return toolStale, fp, n
}

// ToolFinding is a bundled search tool that a start would not take as it
// is: stale (removed or changed since a start placed it: the next start
// places it again), or Foreign (a file piship did not place, which Pi
// uses instead of the bundled one).
type ToolFinding struct {
	Name, Path string
	Foreign    bool
}

// CheckSearchTools applies the start's rule to the agent bin directory
// without changing it (doctor): the bundled tools that a start would
// replace, or that Pi would take from elsewhere. It hashes every tool
// there, whatever its fingerprint.
func CheckSearchTools(rel *receipt.Release, getenv func(string) string) (bin string, findings []ToolFinding, err error) {
	if !IsPi(rel.Entry) || len(rel.SearchTools) == 0 {
		return "", nil, nil
	}
	if bin, err = AgentBinDir(getenv); err != nil {
		return "", nil, err
	}
	rc := readToolsReceipt(filepath.Join(bin, ToolsReceiptName))
	for _, t := range rel.SearchTools {
		exe, dst := agentToolPath(bin, t)
		_, placed := rc.Tools[exe]
		switch state, _, _ := inspectTool(rc, exe, dst, t.SHA256, false); {
		case state == toolStale && placed:
			// (Missing and never placed: no start has run yet.)
			findings = append(findings, ToolFinding{Name: exe, Path: dst})
		case state == toolForeign:
			findings = append(findings, ToolFinding{Name: exe, Path: dst, Foreign: true})
		}
	}
	return bin, findings, nil
}

// RemovePlacedTools removes the copies in the agent bin directory bin
// that the search tools receipt records with one of tools' digests and
// that still have those bytes, and their records (the receipt itself
// when none is left); it returns the paths removed (purge). A file piship
// did not place, or one changed since, is left.
func RemovePlacedTools(bin string, tools []receipt.SearchTool) []string {
	rpath := filepath.Join(bin, ToolsReceiptName)
	rc := readToolsReceipt(rpath)
	if len(rc.Tools) == 0 {
		return nil
	}
	ours := map[string]bool{}
	for _, t := range tools {
		ours[t.SHA256] = true
	}
	var removed []string
	for exe, rec := range rc.Tools {
		if !ours[rec.SHA256] || exe != filepath.Base(exe) {
			continue
		}
		p := filepath.Join(bin, exe)
		if sum, _, err := hashPath(p); err == nil && sum == rec.SHA256 {
			if os.Remove(p) == nil {
				removed = append(removed, p)
			}
		}
		delete(rc.Tools, exe)
	}
	if len(rc.Tools) == 0 {
		if os.Remove(rpath) == nil {
			removed = append(removed, rpath)
		}
		return removed
	}
	_ = writeRecord(rpath, rc)
	return removed
}

// ToolDownloadsDeferred reports whether a Pi start without bundled search
// tools runs offline: neither fd (fdfind) nor rg is in the agent bin
// directory bin or on PATH, and PISHIP_ALLOW_TOOL_DOWNLOAD is not 1. Doctor
// warns on the same test.
func ToolDownloadsDeferred(getenv func(string) string, bin string) bool {
	if getenv(EnvAllowToolDownload) == "1" {
		return false
	}
	for _, names := range [][]string{{"fd", "fdfind"}, {"rg"}} {
		for _, n := range names {
			exe := n
			if runtime.GOOS == "windows" {
				exe += ".exe"
			}
			if _, err := os.Stat(filepath.Join(bin, exe)); err == nil {
				return false
			}
			if lookPath(getenv, n) {
				return false
			}
		}
	}
	return true
}

// lookPath is exec.LookPath over getenv's PATH.
func lookPath(getenv func(string) string, name string) bool {
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if runtime.GOOS == "windows" {
			p += ".exe"
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0) {
			return true
		}
	}
	return false
}

// placeTool copies src to dst through a sibling temporary file, hashing
// the bytes as they are copied: a digest that is not want leaves dst as
// it was and fails INTEGRITY_FAILED.
func placeTool(src, dst, want string) (int64, error) {
	in, err := atomicfs.OpenRegular(src)
	if err != nil {
		return 0, receipt.Errorf(receipt.CodeIntegrity, "the bundled search tool %s cannot be read (%v): nothing was run; run piship doctor, then piship repair", src, err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	f, err := atomicfs.Create(dst, 0o755, atomicfs.Options{})
	if err != nil {
		return 0, err
	}
	defer f.Abort()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), in)
	if err != nil {
		return n, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return n, receipt.Errorf(receipt.CodeIntegrity, "the bundled search tool %s changed since it was installed (sha256 %s, the receipt recorded %s): nothing was run; run piship repair", src, got, want)
	}
	return n, f.Commit()
}

func hashPath(p string) (string, int64, error) {
	f, err := atomicfs.OpenRegular(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

func statFingerprint(p string) (fingerprint, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return fingerprint{}, err
	}
	if !fi.Mode().IsRegular() {
		return fingerprint{}, fmt.Errorf("%s is not a regular file", p)
	}
	fp := fingerprint{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
	sysFingerprint(fi, &fp)
	return fp, nil
}

// readRecord reads a start's JSON record at path into v (the search tools',
// the pinned Node's, the node-on-PATH check's); false when it is missing
// or unreadable, which every caller takes as "check in full".
func readRecord(path string, v any) bool {
	data, err := atomicfs.ReadRegular(path, 0)
	return err == nil && json.Unmarshal(data, v) == nil
}

// writeRecord writes v as a start's JSON record at path (its directory
// made 0700 when missing); a failure only means the next start checks in
// full again.
func writeRecord(path string, v any) error {
	data, _ := json.MarshalIndent(v, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfs.WriteFile(path, append(data, '\n'), 0o644, atomicfs.Options{})
}
