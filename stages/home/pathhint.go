package home

import (
	"path/filepath"
	"strings"
)

// PathHint tells how to put the bin home on PATH for the user's shell, or
// "" when bin is on pathEnv (the PATH value) already. shell is $SHELL
// (bash, zsh and fish get their own start-up file or command, anything
// else ~/.profile), goos the platform (windows: the user's PATH setting).
// The text is two lines: what is wrong, then the line to add.
func PathHint(bin, pathEnv, shell, goos string) string {
	sep := ":"
	if goos == "windows" {
		sep = ";"
	}
	clean := filepath.Clean(bin)
	for _, dir := range strings.Split(pathEnv, sep) {
		if dir != "" && filepath.Clean(dir) == clean {
			return ""
		}
	}
	head := bin + " is not on PATH, so the command shims there are not found by name yet."
	if goos == "windows" {
		return head + "\nAdd it to your user PATH (Settings > System > About > Advanced system settings > Environment Variables) and open a new terminal:\n  " + bin
	}
	quoted := `"` + bin + `:$PATH"`
	if strings.ContainsAny(bin, "\"$`\\") {
		quoted = "'" + strings.ReplaceAll(bin, "'", `'\''`) + `':"$PATH"`
	}
	export := "export PATH=" + quoted
	switch filepath.Base(shell) {
	case "bash":
		return head + "\nAdd this line to ~/.bashrc and open a new shell:\n  " + export
	case "zsh":
		return head + "\nAdd this line to ~/.zshrc and open a new shell:\n  " + export
	case "fish":
		return head + "\nRun this once in fish (it is kept for every later shell):\n  fish_add_path " + fishQuote(bin)
	}
	return head + "\nAdd this line to ~/.profile and log in again:\n  " + export
}

// fishQuote quotes s for fish when it needs it.
func fishQuote(s string) string {
	if !strings.ContainsAny(s, " \t'\"$\\*?~#;&|<>(){}[]") {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
