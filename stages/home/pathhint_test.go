package home

import "testing"

// After an install whose bin home is not on PATH the user is told the
// line to add, for their shell; on PATH nothing is said.
func TestPathHint(t *testing.T) {
	const bin = "/home/u/.local/bin"
	for _, c := range []struct{ path, shell, goos, want string }{
		{"/usr/bin:/home/u/.local/bin", "/bin/bash", "linux", ""},
		{"/usr/bin:/home/u/.local/bin/", "/bin/bash", "linux", ""},
		{"/usr/bin:/bin", "/bin/bash", "linux", bin + " is not on PATH, so the command shims there are not found by name yet.\n" +
			"Add this line to ~/.bashrc and open a new shell:\n  export PATH=\"/home/u/.local/bin:$PATH\""},
		{"/usr/bin", "/usr/local/bin/zsh", "darwin", bin + " is not on PATH, so the command shims there are not found by name yet.\n" +
			"Add this line to ~/.zshrc and open a new shell:\n  export PATH=\"/home/u/.local/bin:$PATH\""},
		{"/usr/bin", "/usr/bin/fish", "linux", bin + " is not on PATH, so the command shims there are not found by name yet.\n" +
			"Run this once in fish (it is kept for every later shell):\n  fish_add_path /home/u/.local/bin"},
		{"/usr/bin", "/bin/dash", "linux", bin + " is not on PATH, so the command shims there are not found by name yet.\n" +
			"Add this line to ~/.profile and log in again:\n  export PATH=\"/home/u/.local/bin:$PATH\""},
		{"", "", "linux", bin + " is not on PATH, so the command shims there are not found by name yet.\n" +
			"Add this line to ~/.profile and log in again:\n  export PATH=\"/home/u/.local/bin:$PATH\""},
	} {
		if got := PathHint(bin, c.path, c.shell, c.goos); got != c.want {
			t.Errorf("PATH %q SHELL %q %s:\ngot  %q\nwant %q", c.path, c.shell, c.goos, got, c.want)
		}
	}
	// A bin home with a $ or a quote is quoted so the line means it.
	if got := PathHint("/tmp/a$b", "/usr/bin", "bash", "linux"); got[len(got)-len(`'/tmp/a$b':"$PATH"`):] != `'/tmp/a$b':"$PATH"` {
		t.Errorf("quoting: %q", got)
	}
	if got := PathHint("/tmp/my bin", "/usr/bin", "fish", "linux"); got[len(got)-len(`fish_add_path '/tmp/my bin'`):] != `fish_add_path '/tmp/my bin'` {
		t.Errorf("fish quoting: %q", got)
	}
	if got := PathHint(`C:\Users\u\bin`, `C:\Windows;C:\Users\u\bin`, "", "windows"); got != "" {
		t.Errorf("windows on PATH: %q", got)
	}
}
