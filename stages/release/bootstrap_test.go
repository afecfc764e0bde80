package release

import (
	"strings"
	"testing"
)

// install.ps1 cannot run here (no PowerShell): it is held to its
// structure. It names the win32-x64 archive and its sha256, checks them
// with Get-FileHash, fetches with Invoke-WebRequest, fetches and checks the
// launcher beside the installer (as install.sh does), runs the installer
// .exe and passes --expect-root when the lock pins a root. install.sh
// names every target's row; neither is written with an unsafe value.
func TestBootstrapScripts(t *testing.T) {
	sum, isum, lsum := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("d", 64)
	root := "sha256:" + strings.Repeat("c", 64)
	b := Bootstrap{ID: "hello", Version: "1.0.0", RootSHA256: root, Archives: []BootstrapArchive{
		{Target: "linux-x64", Archive: "hello-1.0.0-linux-x64.tar.gz", SHA256: sum},
		{Target: "win32-x64", Archive: "hello-1.0.0-win32-x64.tar.gz", SHA256: sum, Installer: "hello-1.0.0-win32-x64/piship.exe", InstallerSHA256: isum,
			Launcher: "hello-1.0.0-win32-x64/piship-launch.exe", LauncherSHA256: lsum},
	}}
	sh, ps1, err := BootstrapScripts(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"'win32-x64' = @{ Archive = 'hello-1.0.0-win32-x64.tar.gz'; Sha256 = '" + sum + "'; Installer = 'hello-1.0.0-win32-x64/piship.exe'; InstallerSha256 = '" + isum + "'; Launcher = 'hello-1.0.0-win32-x64/piship-launch.exe'; LauncherSha256 = '" + lsum + "'",
		"Invoke-WebRequest -UseBasicParsing -Uri \"$base/$($row.Launcher)\" -OutFile $launch", "if ($got -ne $row.LauncherSha256)",
		"$RootPin = '" + root + "'", "if ($RootPin) { $installArgs += @('--expect-root', $RootPin) }", "Get-FileHash -Algorithm SHA256 -LiteralPath $arc",
		"Invoke-WebRequest -UseBasicParsing -Uri \"$base/$($row.Archive)\"", "& $inst @installArgs", "$env:PISHIP_RELEASE_BASE", "\r\n"} {
		if !strings.Contains(string(ps1), want) {
			t.Errorf("install.ps1 lacks %q:\n%s", want, ps1)
		}
	}
	for _, want := range []string{"  linux-x64) archive='hello-1.0.0-linux-x64.tar.gz'; sum='" + sum + "'; installer=''",
		"  win32-x64) archive='hello-1.0.0-win32-x64.tar.gz'", "root_pin='" + root + "'", "released for linux-x64, win32-x64 only"} {
		if !strings.Contains(string(sh), want) {
			t.Errorf("install.sh lacks %q:\n%s", want, sh)
		}
	}
	// No win32 archive: no install.ps1. No root pin: no --expect-root value.
	b.Archives, b.RootSHA256 = b.Archives[:1], ""
	if sh, ps1, err = BootstrapScripts(b); err != nil || ps1 != nil || !strings.Contains(string(sh), "root_pin=''") {
		t.Fatalf("linux only: ps1 %v, err %v\n%s", ps1 != nil, err, sh)
	}
	b.Version = "1.0.0'; rm -rf ~; '"
	if _, _, err := BootstrapScripts(b); err == nil {
		t.Fatal("a quote went into install.sh")
	}
}
