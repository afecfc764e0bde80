package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache"
)

// VersionCmd is `piship version`.
func VersionCmd(e *Env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "version",
		GroupID: GroupPipeline,
		Short:   "print the version, commit, Go version and platform (also --version, -v)",
		Long: `Prints piship's module version, the VCS commit and its date it was built from (from the
build info, or stamped by make build; "commit unknown" when neither knows), the Go version,
the platform and the build digest (the sha256 of the executable, part of every cache key).`,
		Example: `  piship version
  piship --version`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON {
				PrintJSON(e, VersionDocOf())
				return nil
			}
			return Done(PrintVersion(e))
		},
	}
	JSONFlag(c, &asJSON)
	return c
}

// Set by make build with -ldflags -X (git rev-parse HEAD, the commit date
// and "true" for a tree with changes), for builds whose build info has no
// VCS fields (-buildvcs=false, as this machine's GOFLAGS has).
var (
	commit         string
	commitDate     string
	commitModified string
)

// PrintVersion prints the version lines.
func PrintVersion(e *Env) int {
	v := VersionDocOf()
	vcs := "commit unknown"
	if v.Commit != "" {
		vcs = "commit " + v.Commit
		if v.CommitDate != "" {
			vcs += " (" + v.CommitDate + ")"
		}
		if v.Modified {
			vcs += ", modified"
		}
	}
	fmt.Fprintf(e.Stdout, "piship %s\n%s\n%s %s/%s, build %s\n", v.Version, vcs, v.Go, v.OS, v.Arch, v.Build[:min(12, len(v.Build))])
	return ExitOK
}

// VersionDocOf is piship's version, piship-version/v1.
func VersionDocOf() VersionDoc {
	version, rev, date, modified := BuildVersion()
	return VersionDoc{Schema: Schema("version"), Version: version, Commit: rev, CommitDate: date, Modified: modified,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Build: cache.ToolDigest()}
}

// ServiceVersion is the service.version of a run's spans: the module
// version and, when known, the commit ("(devel)+0123456789ab").
func ServiceVersion() string {
	version, rev, _, _ := BuildVersion()
	if rev != "" {
		version += "+" + rev[:min(12, len(rev))]
	}
	return version
}

// BuildVersion is the module version and the VCS commit, its date and
// whether the tree was modified: from the build info, else what make
// build stamped (-ldflags -X).
func BuildVersion() (version, rev, date string, modified bool) {
	version, rev, date, modified = "(devel)", commit, commitDate, commitModified == "true"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				date = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	return
}
