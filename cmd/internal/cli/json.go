package cli

// This file holds the documents `piship COMMAND --json` prints, one struct
// per schema (docs/json.md documents each): "schema" first, camelCase keys,
// struct field order, lists sorted where the source is a map, no temporary
// paths. A command prints one of them, indented, as the only thing on
// stdout; a failure prints ErrorDoc with the command's schema.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/stage/errcode"
)

// Schema is the schema name of command's document: piship-<command>/vN,
// the words of a subcommand joined by "-" (cache prune: piship-cache-prune/v1).
// N is 1 unless the document's shape changed (schemaVersions).
func Schema(command string) string {
	if strings.TrimSpace(command) == "" {
		return "piship/v1"
	}
	name := strings.Join(strings.Fields(command), "-")
	return fmt.Sprintf("piship-%s/v%d", name, max(1, schemaVersions[name]))
}

// schemaVersions are the documents past their first shape: release lists
// one release per target since v2.
var schemaVersions = map[string]int{"release": 2}

// WriteJSON prints doc indented by two spaces, with a final newline.
func WriteJSON(w io.Writer, doc any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		b.Reset()
		_ = json.NewEncoder(&b).Encode(ErrorDoc{Schema: "piship/v1", Error: ErrorInfo{Code: "INTERNAL", Message: err.Error()}})
	}
	pipelines.WriteAll(w, b.String())
}

// ErrorDoc is what a command with --json prints when it failed without a
// document of its own.
type ErrorDoc struct {
	Schema string    `json:"schema"`
	Error  ErrorInfo `json:"error"`
}

// ErrorInfo is a failure: its searchable code and the message after it.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// codeLine is a line of stderr that carries an error code: "piship: CODE: message",
// "CODE: message" or "stage x: CODE: message".
var codeLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:piship: )?(?:[^:]*: ){0,3}?([A-Z][A-Z0-9]*_[A-Z0-9_]+): (.*)$`)
})

// FailureLog passes a command's stderr through and keeps its last line
// that carries an error code: the failure the command ended with (piship
// prints the failing verdict or error as the last such line).
type FailureLog struct {
	W    io.Writer
	mu   sync.Mutex
	part []byte
	last *ErrorInfo
}

// Underlying is the writer the log writes through (the run's progress
// asks it whether stderr is a terminal).
func (f *FailureLog) Underlying() io.Writer { return f.W }

func (f *FailureLog) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.part = append(f.part, p...)
	for {
		i := bytes.IndexByte(f.part, '\n')
		if i < 0 {
			break
		}
		f.scan(string(f.part[:i]))
		f.part = f.part[i+1:]
	}
	f.mu.Unlock()
	return f.W.Write(p)
}

func (f *FailureLog) scan(line string) {
	if m := codeLine().FindStringSubmatch(strings.TrimSpace(line)); m != nil {
		f.last = &ErrorInfo{Code: m[1], Message: m[2]}
	}
}

// Error is the failure the command printed last; without one, a code from
// the exit code (USAGE_INVALID for ExitUsage, FAILED otherwise) and msg.
func (f *FailureLog) Error(code int, msg string) ErrorInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.part) > 0 {
		f.scan(string(f.part))
	}
	if f.last != nil {
		return *f.last
	}
	if code == ExitUsage {
		return ErrorInfo{Code: errcode.UsageInvalid, Message: msg}
	}
	return ErrorInfo{Code: "FAILED", Message: msg}
}

// InstallDoc is piship-install/v1.
type InstallDoc struct {
	Schema  string  `json:"schema"`
	ID      string  `json:"id"`
	Version string  `json:"version"`
	Command string  `json:"command"`
	Reused  bool    `json:"reused"`
	Files   int64   `json:"files"`
	Bytes   int64   `json:"bytes"`
	Linked  int64   `json:"linked"`
	Seconds float64 `json:"seconds"`
	// PathHint is the line to add to the shell's profile when the bin home
	// is not on PATH ("" when it is).
	PathHint string `json:"pathHint"`
}

// InstallJSON is the install as piship-install/v1, with hint the PATH hint.
func InstallJSON(in *pipelines.Installed, hint string) InstallDoc {
	return InstallDoc{Schema: Schema("install"), ID: in.ID, Version: in.Version, Command: in.Command, Reused: in.Reused, Files: in.Files,
		Bytes: in.Bytes, Linked: in.Linked, Seconds: in.Total.Seconds(), PathHint: hint}
}

// UpdateDoc is piship-update/v1 (update and update --check).
type UpdateDoc struct {
	Schema    string `json:"schema"`
	ID        string `json:"id"`
	Check     bool   `json:"check"`     // --check: nothing was changed
	Available bool   `json:"available"` // the channel has a newer version
	Updated   bool   `json:"updated"`   // this run installed it
	Current   string `json:"current"`
	Version   string `json:"version"`
	Channel   string `json:"channel"`
	Root      int64  `json:"root"`      // the trusted TUF root version
	Timestamp int64  `json:"timestamp"` // the trusted timestamp version
	Bytes     int64  `json:"bytes"`
	Linked    int64  `json:"linked"`
	Notes     string `json:"notes"` // the new version's release notes (--check: to be installed; else installed), "" when none
	// Download is what the update downloaded (--check: would).
	Download UpdateDownload `json:"download"`
	Seconds  float64        `json:"seconds"`
}

// UpdateDownload is piship-update/v1's download: "delta" (from the
// installed version From) or "archive" ("" when up to date), the bytes
// downloaded, and why a published delta was not taken (skipped) or could
// not be used (fallback).
type UpdateDownload struct {
	Kind     string `json:"kind"`
	Bytes    int64  `json:"bytes"`
	From     string `json:"from"`
	Skipped  string `json:"skipped"`
	Fallback string `json:"fallback"`
	// Registry is the registry blob URL the archive came from ("" when
	// from the TUF repository, or a delta was downloaded).
	Registry string `json:"registry"`
}

// UpdateJSON is the update as piship-update/v1.
func UpdateJSON(u *pipelines.Updated, id string, check bool) UpdateDoc {
	return UpdateDoc{Schema: Schema("update"), ID: id, Check: check, Available: u.Available, Updated: u.Available && !check,
		Current: u.Current, Version: u.Version, Channel: u.Channel, Root: u.Root, Timestamp: u.Timestamp, Bytes: u.Bytes, Linked: u.Linked, Notes: u.Notes, Seconds: u.Total.Seconds(),
		Download: UpdateDownload{Kind: u.Download, Bytes: u.DownloadBytes, From: u.DeltaFrom, Skipped: u.DeltaSkipped, Fallback: u.DeltaFallback, Registry: u.Registry}}
}

// RollbackDoc is piship-rollback/v1.
type RollbackDoc struct {
	Schema string `json:"schema"`
	ID     string `json:"id"`
	From   string `json:"from"`
	Active string `json:"active"`
}

// RollbackJSON is the rollback as piship-rollback/v1.
func RollbackJSON(r *pipelines.RolledBack, id string) RollbackDoc {
	return RollbackDoc{Schema: Schema("rollback"), ID: id, From: r.From, Active: r.Active}
}

// RepairDoc is piship-repair/v1.
type RepairDoc struct {
	Schema   string   `json:"schema"`
	ID       string   `json:"id"`
	Version  string   `json:"version"`
	Source   string   `json:"source"`
	Restored []string `json:"restored"`
	Removed  []string `json:"removed"`
	Modes    []string `json:"modes"`
	Records  []string `json:"records"`
}

// RepairJSON is res as piship-repair/v1 (lists sorted, never null).
func RepairJSON(res *home.RepairResult) RepairDoc {
	return RepairDoc{Schema: Schema("repair"), ID: res.ID, Version: res.Version, Source: res.Source, Restored: sorted(res.Restored), Removed: sorted(res.Removed),
		Modes: sorted(res.Modes), Records: sorted(res.Records)}
}

// UninstallDoc is piship-uninstall/v1.
type UninstallDoc struct {
	Schema  string   `json:"schema"`
	ID      string   `json:"id"`
	Purge   bool     `json:"purge"`
	Removed []string `json:"removed"`
	Kept    []string `json:"kept"`
}

// UninstallJSON is res as piship-uninstall/v1 (lists sorted, never null).
func UninstallJSON(id string, purge bool, res *home.UninstallResult) UninstallDoc {
	return UninstallDoc{Schema: Schema("uninstall"), ID: id, Purge: purge, Removed: sorted(res.Removed), Kept: sorted(res.Kept)}
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// VersionDoc is piship-version/v1.
type VersionDoc struct {
	Schema     string `json:"schema"`
	Version    string `json:"version"`
	Commit     string `json:"commit"` // "" when unknown
	CommitDate string `json:"commitDate"`
	Modified   bool   `json:"modified"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Build      string `json:"build"` // the build digest (sha256 of the executable)
}
