package release

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/template"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/archive"
)

// The bootstrap scripts: install.sh and install.ps1 in <out>/releases,
// beside the archives (not the install.sh inside each release directory,
// InstallScriptName, which is part of the archive). They are the one thing
// an end user fetches first: each names, for every target of one version of
// a distribution published there, the archive, its sha256 and the installer
// its release directory carries (with that installer's sha256), plus the
// TUF root the lock pins for updates. Run on a host, the script picks the
// host's target, refuses when there is none, checks the archive's (and
// installer's) sha256 before anything runs, and installs with
// `<installer> install ARCHIVE --sha256 HEX [--expect-root DIGEST]`.
//
// They are outside every release directory, every archive and every
// checksums file: their content is derived from the archives' sidecars and
// changes whenever another target of the same version is published, and
// they carry the archives' digests themselves. They are written by
// release_set (WriteBootstrap) once every target of a release is published; the
// last version published is the one they install.
const (
	BootstrapShName  = "install.sh"
	BootstrapPS1Name = "install.ps1"
	// BootstrapBaseEnv names the URL (or directory) install.sh and
	// install.ps1 fetch the archive and installer from when they are not
	// run from a file beside them: curl -fsSL URL/install.sh |
	// PISHIP_RELEASE_BASE=URL sh.
	BootstrapBaseEnv = "PISHIP_RELEASE_BASE"
)

// BootstrapArchive is one target's row of the bootstrap scripts.
type BootstrapArchive struct {
	Target  string // <platform>-<arch>
	Archive string // <id>-<version>-<target>.tar.zst (or .tar.gz), relative to the releases directory
	SHA256  string // the archive's, from its sidecar
	// Installer is <name>/piship[.exe], "" when the release directory
	// carries none: the distribution's installers block pins none for the
	// target and it is not the host's of the release (release_publish).
	Installer       string
	InstallerSHA256 string
	Launcher        string // <name>/piship-launch[.exe] beside the installer, "" when none
	LauncherSHA256  string
}

// Bootstrap is what the bootstrap scripts are generated from.
type Bootstrap struct {
	ID, Version string
	RootSHA256  string // "sha256:<hex>" the lock pins for updates, "" when it has no updates block
	Archives    []BootstrapArchive
}

// InstallerName is the file name of the installer a release directory for
// target carries (release_publish ships cmd/piship-install under piship's
// name).
func InstallerName(target string) string {
	if strings.HasPrefix(target, "win32-") {
		return "piship.exe"
	}
	return "piship"
}

// LauncherName is the launcher's file name beside it: the installer
// keeps it in the install home for the command shims, so the shims do not
// name a downloaded installer.
func LauncherName(target string) string {
	if strings.HasPrefix(target, "win32-") {
		return "piship-launch.exe"
	}
	return "piship-launch"
}

// hashRegular returns the sha256 of releases/rel when it is a regular file,
// "" when there is none.
func hashRegular(releases, rel string) (string, error) {
	p := filepath.Join(releases, filepath.FromSlash(rel))
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return "", nil
	}
	return cache.HashFile(p)
}

// ScanBootstrap builds the bootstrap data for id and version from the
// archives published in releases: every <id>-<version>-<target>.tar.zst
// (or an earlier piship's .tar.gz, archive.TrimExt) with its sidecar, and
// the installer each release directory carries.
func ScanBootstrap(releases, id, version, rootSHA256 string) (Bootstrap, error) {
	b := Bootstrap{ID: id, Version: version, RootSHA256: rootSHA256}
	entries, err := os.ReadDir(releases)
	if err != nil {
		return b, err
	}
	for _, e := range entries {
		base, ok := archive.TrimExt(e.Name())
		if !ok || e.IsDir() {
			continue
		}
		n, why := ParseArchiveName(e.Name())
		if why != "" || n.ID != id || n.Version != version {
			continue
		}
		side, err := os.ReadFile(filepath.Join(releases, e.Name()+".sha256"))
		if err != nil {
			return b, fmt.Errorf("%s: no sidecar: %v", e.Name(), err)
		}
		sum, err := ParseSidecar(side, e.Name())
		if err != nil {
			return b, err
		}
		a := BootstrapArchive{Target: n.Target, Archive: e.Name(), SHA256: sum}
		for _, f := range []struct {
			rel       string
			path, sum *string
		}{{base + "/" + InstallerName(n.Target), &a.Installer, &a.InstallerSHA256}, {base + "/" + LauncherName(n.Target), &a.Launcher, &a.LauncherSHA256}} {
			s, err := hashRegular(releases, f.rel)
			if err != nil {
				return b, err
			}
			if s != "" {
				*f.path, *f.sum = f.rel, s
			}
		}
		b.Archives = append(b.Archives, a)
	}
	sort.Slice(b.Archives, func(i, j int) bool { return b.Archives[i].Target < b.Archives[j].Target })
	return b, nil
}

// scriptSafe is what a value embedded in the scripts' single-quoted
// strings may hold: names, versions, hex digests and slash paths. Nothing
// that could end a quote.
var scriptSafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._:/+-]*$`) })

// BootstrapScripts renders install.sh and install.ps1 from b. install.ps1
// is nil when b has no win32 archive: there is nothing for it to install.
func BootstrapScripts(b Bootstrap) (sh, ps1 []byte, err error) {
	vals := []string{b.ID, b.Version, b.RootSHA256}
	win := false
	for _, a := range b.Archives {
		vals = append(vals, a.Target, a.Archive, a.SHA256, a.Installer, a.InstallerSHA256, a.Launcher, a.LauncherSHA256)
		win = win || strings.HasPrefix(a.Target, "win32-")
	}
	for _, v := range vals {
		if !scriptSafe().MatchString(v) {
			return nil, nil, fmt.Errorf("%q cannot go into install.sh: only letters, digits and ._:/+- may", v)
		}
	}
	if len(b.Archives) == 0 {
		return nil, nil, fmt.Errorf("no archive of %s %s to write install.sh for", b.ID, b.Version)
	}
	var out bytes.Buffer
	if err := shTemplate().Execute(&out, b); err != nil {
		return nil, nil, err
	}
	sh = bytes.Clone(out.Bytes())
	if win {
		out.Reset()
		if err := ps1Template().Execute(&out, b); err != nil {
			return nil, nil, err
		}
		// PowerShell 5 reads a script without a BOM in the ANSI code page;
		// it is ASCII, so CRLF line ends are all Windows needs.
		ps1 = bytes.ReplaceAll(out.Bytes(), []byte("\n"), []byte("\r\n"))
	}
	return sh, ps1, nil
}

// WriteBootstrap writes install.sh (and install.ps1 when a win32 archive is
// among them) into releases for id and version, replacing any before.
// A stale install.ps1 goes when no win32 archive is left to install.
func WriteBootstrap(releases, id, version, rootSHA256 string) error {
	b, err := ScanBootstrap(releases, id, version, rootSHA256)
	if err != nil {
		return err
	}
	sh, ps1, err := BootstrapScripts(b)
	if err != nil {
		return err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(releases, BootstrapShName), sh, 0o755); err != nil {
		return err
	}
	if ps1 == nil {
		if err := os.Remove(filepath.Join(releases, BootstrapPS1Name)); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return atomicfs.WriteFileAll(filepath.Join(releases, BootstrapPS1Name), ps1, 0o644)
}

func targetsOf(b Bootstrap) string {
	var ts []string
	for _, a := range b.Archives {
		ts = append(ts, a.Target)
	}
	return strings.Join(ts, ", ")
}

var funcs = template.FuncMap{"targets": targetsOf, "env": func() string { return BootstrapBaseEnv }}

// The scripts' templates are parsed when a release writes them, not at the
// start of every command that links this package (the installer's too).
var shTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New(BootstrapShName).Funcs(funcs).Parse(shText))
})

var ps1Template = sync.OnceValue(func() *template.Template {
	return template.Must(template.New(BootstrapPS1Name).Funcs(funcs).Parse(ps1Text))
})

const shText = `#!/bin/sh
# Installs {{.ID}} {{.Version}}: the archive for this host's target, checked
# against its sha256 below, with the installer its release directory carries.
# Written by piship release beside the archives; do not edit.
#
#   sh install.sh                    from the directory holding the archives
#   sh install.sh BASE               from BASE: a directory or an http(s) URL
#   curl -fsSL URL/install.sh | {{env}}=URL sh
#
# BASE is the first argument, else ${{env}}, else this script's directory.
set -eu
id='{{.ID}}'
version='{{.Version}}'
root_pin='{{.RootSHA256}}'

die() { echo "install.sh: $*" >&2; exit 1; }

case $(uname -s) in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  MINGW*|MSYS*|CYGWIN*) os=win32 ;;
  *) os=$(uname -s | tr '[:upper:]' '[:lower:]') ;;
esac
case $(uname -m) in
  x86_64|amd64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac
target=$os-$arch

case $target in
{{- range .Archives}}
  {{.Target}}) archive='{{.Archive}}'; sum='{{.SHA256}}'; installer='{{.Installer}}'; installer_sum='{{.InstallerSHA256}}'; launcher='{{.Launcher}}'; launcher_sum='{{.LauncherSHA256}}' ;;
{{- end}}
  *) die "this host is $target; $id $version was released for {{targets .}} only: there is no archive for $target here" ;;
esac

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum is on PATH: install one (coreutils or perl) and run install.sh again"
  fi
}

fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL -o "$2" "$1" || die "cannot download $1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || die "cannot download $1"
  else
    die "neither curl nor wget is on PATH: install one, or download $1 and run install.sh beside it"
  fi
}

base=${1:-${ {{- env}}:-}}
tmp=
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT
case $base in
  http://*|https://*)
    base=${base%/}
    tmp=$(mktemp -d)
    fetch "$base/$archive" "$tmp/$archive"
    arc=$tmp/$archive
    if [ -n "$installer" ]; then
      fetch "$base/$installer" "$tmp/piship"
      inst=$tmp/piship
      if [ -n "$launcher" ]; then
        # Beside the installer, install keeps it in the install home and
        # the command shims run it, not this temporary installer.
        fetch "$base/$launcher" "$tmp/piship-launch"
        got=$(sha256 "$tmp/piship-launch")
        [ "$got" = "$launcher_sum" ] || die "$base/$launcher has sha256 $got, expected $launcher_sum: it is not the launcher released with $archive; nothing was installed"
        chmod +x "$tmp/piship-launch"
      else
        # Without a launcher the command shims run the installer itself:
        # it must outlive this script.
        echo "install.sh: the release carries no piship-launch; keeping the installer in $tmp for the command shims" >&2
        trap - EXIT
      fi
    fi
    ;;
  *)
    if [ -z "$base" ]; then
      base=$(dirname -- "$0")
      [ -f "$base/$archive" ] || die "$archive is not beside this script (run from a pipe?): set {{env}} to the URL or directory that holds it"
    fi
    arc=$base/$archive
    [ -f "$arc" ] || die "$arc is missing: {{env}} or the argument must name the directory (or http(s) URL) holding the archives"
    if [ -n "$installer" ]; then
      inst=$base/$installer
      [ -f "$inst" ] || die "$inst is missing: the release directory of $archive must stand beside it"
    fi
    ;;
esac

got=$(sha256 "$arc")
[ "$got" = "$sum" ] || die "$arc has sha256 $got, expected $sum: it is not the archive this script was written for; nothing was installed"
if [ -n "$installer" ]; then
  got=$(sha256 "$inst")
  [ "$got" = "$installer_sum" ] || die "$inst has sha256 $got, expected $installer_sum: it is not the installer released with $archive; nothing was installed"
  [ -x "$inst" ] || chmod +x "$inst" 2>/dev/null || { cp "$inst" "$inst.x" && chmod +x "$inst.x" && inst=$inst.x; }
else
  command -v piship >/dev/null 2>&1 || die "the release directory of $archive carries no installer (its distribution pins none for $target, and it was released on another host) and piship is not on PATH: install piship, then run install.sh again"
  inst=piship
fi

if [ -n "$root_pin" ]; then
  set -- --expect-root "$root_pin"
else
  set --
fi
"$inst" install "$arc" --sha256 "$sum" "$@"
`

const ps1Text = `# Installs {{.ID}} {{.Version}} on Windows x64: the win32-x64 archive, checked
# against its sha256 below, with the installer its release directory carries.
# Written by piship release beside the archives; do not edit.
#
#   powershell -ExecutionPolicy Bypass -File install.ps1          from the directory holding the archives
#   powershell -ExecutionPolicy Bypass -File install.ps1 BASE     from BASE: a directory or an http(s) URL
#   $env:{{env}} = 'URL'; irm URL/install.ps1 | iex
#
# BASE is the first argument, else $env:{{env}}, else this script's directory.
$ErrorActionPreference = 'Stop'
$Id = '{{.ID}}'
$Version = '{{.Version}}'
$RootPin = '{{.RootSHA256}}'
$Rows = @{
{{- range .Archives}}
  '{{.Target}}' = @{ Archive = '{{.Archive}}'; Sha256 = '{{.SHA256}}'; Installer = '{{.Installer}}'; InstallerSha256 = '{{.InstallerSHA256}}'; Launcher = '{{.Launcher}}'; LauncherSha256 = '{{.LauncherSHA256}}' }
{{- end}}
}

function Fail($msg) { [Console]::Error.WriteLine("install.ps1: $msg"); exit 1 }

$arch = if ($env:PROCESSOR_ARCHITEW6432) { $env:PROCESSOR_ARCHITEW6432 } else { $env:PROCESSOR_ARCHITECTURE }
$target = switch ($arch) { 'AMD64' { 'win32-x64' } 'ARM64' { 'win32-arm64' } default { "win32-$arch" } }
if (-not $Rows.ContainsKey($target)) { Fail "this host is $target; $Id $Version was released for {{targets .}} only: there is no archive for $target here" }
$row = $Rows[$target]

$base = if ($args.Count -gt 0) { $args[0] } elseif ($env:{{env}}) { $env:{{env}} } elseif ($PSScriptRoot) { $PSScriptRoot } else { '' }
if (-not $base) { Fail "not run from a file beside the archives: set the {{env}} environment variable to the URL or directory that holds them" }
if ($base -match '^https?://') {
  $base = $base.TrimEnd('/')
  $tmp = Join-Path ([IO.Path]::GetTempPath()) ([IO.Path]::GetRandomFileName())
  New-Item -ItemType Directory -Path $tmp | Out-Null
  $arc = Join-Path $tmp $row.Archive
  Invoke-WebRequest -UseBasicParsing -Uri "$base/$($row.Archive)" -OutFile $arc
  if ($row.Installer) {
    $inst = Join-Path $tmp 'piship-installer.exe'
    Invoke-WebRequest -UseBasicParsing -Uri "$base/$($row.Installer)" -OutFile $inst
    if ($row.Launcher) {
      # Beside the installer, install keeps it in the install home and the
      # command shims run it, not this temporary installer.
      $launch = Join-Path $tmp 'piship-launch.exe'
      Invoke-WebRequest -UseBasicParsing -Uri "$base/$($row.Launcher)" -OutFile $launch
    }
  }
} else {
  $arc = Join-Path $base $row.Archive
  if (-not (Test-Path -LiteralPath $arc -PathType Leaf)) { Fail "$arc is missing: the {{env}} environment variable or the argument must name the directory (or http(s) URL) holding the archives" }
  if ($row.Installer) { $inst = Join-Path $base $row.Installer }
  if ($row.Launcher) { $launch = Join-Path $base $row.Launcher }
}

$got = (Get-FileHash -Algorithm SHA256 -LiteralPath $arc).Hash.ToLowerInvariant()
if ($got -ne $row.Sha256) { Fail "$arc has sha256 $got, expected $($row.Sha256): it is not the archive this script was written for; nothing was installed" }
if ($row.Installer) {
  $got = (Get-FileHash -Algorithm SHA256 -LiteralPath $inst).Hash.ToLowerInvariant()
  if ($got -ne $row.InstallerSha256) { Fail "$inst has sha256 $got, expected $($row.InstallerSha256): it is not the installer released with $($row.Archive); nothing was installed" }
  if ($row.Launcher) {
    $got = (Get-FileHash -Algorithm SHA256 -LiteralPath $launch).Hash.ToLowerInvariant()
    if ($got -ne $row.LauncherSha256) { Fail "$launch has sha256 $got, expected $($row.LauncherSha256): it is not the launcher released with $($row.Archive); nothing was installed" }
  }
} else {
  if (-not (Get-Command piship -ErrorAction SilentlyContinue)) { Fail "the release directory of $($row.Archive) carries no installer (its distribution pins none for $target, and it was released on another host) and piship is not on PATH: install piship, then run install.ps1 again" }
  $inst = 'piship'
}

$installArgs = @('install', $arc, '--sha256', $row.Sha256)
if ($RootPin) { $installArgs += @('--expect-root', $RootPin) }
& $inst @installArgs
exit $LASTEXITCODE
`
