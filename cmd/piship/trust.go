package main

// The repository side of update trust on TUF (stages/tuf): `piship repo`
// makes and signs one distribution's TUF repository. Every command here
// parses flags, reads key files and makes one stages/tuf call; the
// signing, the layout and the atomic writes are that package's.

import (
	"cmp"
	"crypto/ed25519"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"piship.dev/piship/cmd/internal/cli"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/stages/tuf"
)

// tufRoles are the role names the ROLE=... flags take, in the order
// messages list them.
var tufRoles = []string{tuf.RoleRoot, tuf.RoleTargets, tuf.RoleSnapshot, tuf.RoleTimestamp}

func repoCmd(e *cli.Env) *cobra.Command {
	c := &cobra.Command{
		Use:     "repo COMMAND",
		GroupID: cli.GroupDist,
		Short:   "publish releases through a TUF repository (init, add, refresh, rotate-root, rotate-key, revoke, status)",
		Long: `Makes and signs a distribution's update repository on The Update Framework (TUF): root,
targets, snapshot and timestamp metadata with consistent snapshots, servable by any static
HTTP server or read as a directory. Keys are the PEM files piship keygen writes. Every
write is atomic, and timestamp.json, written last, is the commit point.

piship update reads these repositories: a release built with updates.root_sha256 =
"sha256:<root 1>" (printed by repo init) updates from them.`,
		Example: `  piship repo init /srv/hello --key root=root.pem --key targets=release.pem --key snapshot=online.pem --key timestamp=online.pem
  piship repo add /srv/hello out/releases/hello-1.0.0-linux-x64.tar.zst --key release.pem --key online.pem
  piship repo refresh /srv/hello --key online.pem
  piship repo status /srv/hello`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q%s", args[0], c.CommandPath(), cli.SuggestFor(c, args))
			}
			return fmt.Errorf("%s needs a command: usage: piship repo init|add|refresh|rotate-root|rotate-key|revoke|status DIR [flags]", c.CommandPath())
		},
	}
	c.AddCommand(repoInitCmd(e), repoAddCmd(e), repoRefreshCmd(e), repoRotateRootCmd(e), repoRotateKeyCmd(e), repoRevokeCmd(e), repoStatusCmd(e))
	return c
}

func repoInitCmd(e *cli.Env) *cobra.Command {
	var keys, thresholds []string
	c := &cobra.Command{
		Use:   "init DIR --key ROLE=FILE...",
		Short: "make a TUF repository from keys and thresholds",
		Long: `Makes a new TUF repository in DIR (refused if DIR already holds one): root, targets,
snapshot and timestamp version 1, each signed by its role's keys, no releases yet. Every
role needs at least its threshold of keys (--key ROLE=FILE, repeatable; one file may serve
several roles). Prints the sha256 of root 1, which a lock or install --expect-root pins.

Root and targets keys belong offline (people, hardware); snapshot and timestamp keys are
the online ones the scheduled refresh uses.`,
		Example: `  piship repo init /srv/hello --key root=root.pem --key targets=release.pem --key snapshot=online.pem --key timestamp=online.pem
  piship repo init /srv/hello --key root=r1.pem --key root=r2.pem --threshold root=2 --key targets=t.pem --key snapshot=o.pem --key timestamp=o.pem`,
		Args: cli.ExactArgs("DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runRepoInit(e, args[0], keys, thresholds))
		},
	}
	c.Flags().StringArrayVar(&keys, "key", nil, "`ROLE=FILE`: a key of ROLE (root, targets, snapshot, timestamp), a piship keygen PEM file (repeatable; required)")
	c.Flags().StringArrayVar(&thresholds, "threshold", nil, "`ROLE=N`: the number of ROLE's keys that must sign (repeatable; default 1)")
	_ = c.MarkFlagRequired("key")
	return c
}

func runRepoInit(e *cli.Env, dir string, keyFlags, thresholdFlags []string) int {
	o := tuf.InitOptions{Keys: tuf.Roles[[]tuf.Key]{}, Thresholds: tuf.Roles[int]{}}
	for _, f := range keyFlags {
		role, file, err := roleValue("--key", f, "FILE")
		if err != nil {
			return cli.UsageErr(e, cli.CodeUsage, "%v", err)
		}
		k, err := tuf.ReadKey(file)
		if err != nil {
			return cli.FailIn(e, "repo init", err)
		}
		o.Keys[role] = append(o.Keys[role], k)
	}
	var missing []string
	for _, role := range tufRoles {
		if len(o.Keys[role]) == 0 {
			missing = append(missing, role)
		}
	}
	if len(missing) > 0 {
		return cli.UsageErr(e, cli.CodeUsage, "piship repo init needs a key for every role; none for %s: add --key %s=FILE (piship keygen makes one)", strings.Join(missing, ", "), missing[0])
	}
	th, code := thresholdsOf(e, thresholdFlags)
	if code != cli.ExitOK {
		return code
	}
	o.Thresholds = th
	r, err := tuf.Init(dir, o)
	if err != nil {
		return cli.FailIn(e, "repo init", err)
	}
	root, err := r.RootBytes(1)
	if err != nil {
		return cli.FailIn(e, "repo init", err)
	}
	sum := tuf.RootSHA256(root)
	fmt.Fprintf(e.Stdout, "repository %s made: %s\nroot 1 sha256:%s\n", dir, versions(r), sum)
	fmt.Fprintf(e.Stdout, "\nPin it in the updates block of distribution.hcl (source: where %s is served, or its directory), then piship lock and piship release:\n", dir)
	fmt.Fprintf(e.Stdout, "  root_sha256 = \"sha256:%s\"\n", sum)
	fmt.Fprintf(e.Stdout, "Publish a release with piship repo add %s ARCHIVE --key TARGETS.pem --key ONLINE.pem; an install can pin the root too: piship install ARCHIVE --expect-root sha256:%s\n", dir, sum)
	return cli.ExitOK
}

func repoAddCmd(e *cli.Env) *cobra.Command {
	var keys []string
	var ch, registry string
	var po tuf.PublishOptions
	c := &cobra.Command{
		Use:   "add DIR ARCHIVE|SET... --key FILE...",
		Short: "publish release archives on a channel",
		Long: `Publishes release archives (the .tar.zst piship release writes) on a channel of the TUF
repository in DIR: each archive is copied under targets/<channel>/ by its sha256 and becomes
a target with its length, sha256 and its release.json's version, target and lockSha256;
the release notes piship release wrote beside it (<name>/notes.md), when there are any, become
the target <channel>/<name>.notes.md that piship update --check shows;
then targets, snapshot and timestamp are signed again. --key gives the targets, snapshot
and timestamp keys (each file signs the roles it holds). A release already published is
never replaced. A release set (<id>-<version>.SHA256SUMS, beside the archives) publishes
every archive it lists, each first held to the set's digest, or none of them.

Beside each release it publishes the deltas from the --deltas newest earlier releases of the
channel for the same target (default 3; 0 publishes none): <name>.from-<version>.delta, the
files that changed as zstd patches against the installed version's, which piship update
downloads instead of the archive when the installed tree is exactly that version's. A delta
larger than half the archive is not published. --v1-twin also publishes a piship-archive/v1
(.tar.gz) copy of each v2 archive, for installations whose piship reads only v1; an update
takes the newest format its piship reads.

--registry oci://HOST/REPOSITORY names, in each archive's target, the blob piship publish
pushed to that registry (its distribution API URL, https://HOST/v2/REPOSITORY/blobs/sha256:...;
the registry must hold it: publish first). piship update then downloads the archive from the
registry, with the anonymous token step registries such as GHCR ask for, held to the length
and sha256 the targets role signs, as any download; nothing the registry says is trusted. The
repository keeps its own copy too (deltas are made from it, and a piship before this field
downloads it).`,
		Example: `  piship repo add /srv/hello out/releases/hello-1.0.0-linux-x64.tar.zst --key release.pem --key online.pem
  piship repo add /srv/hello out/releases/hello-1.0.0.SHA256SUMS --key release.pem --key online.pem
  piship repo add /srv/hello a.tar.zst b.tar.zst --channel beta --key release.pem --key online.pem
  piship repo add /srv/hello out/releases/hello-1.0.0.SHA256SUMS --registry oci://ghcr.io/acme/hello --key release.pem --key online.pem`,
		Args: cli.RangeArgs(2, -1),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runRepoAdd(e, args[0], args[1:], ch, keys, po, registry))
		},
	}
	c.Flags().StringVar(&registry, "registry", "", "name each archive's blob in the registry repository `oci://HOST[:PORT]/REPOSITORY` (pushed by piship publish) as where updates download it")
	c.Flags().StringVar(&ch, "channel", "stable", "`CHANNEL` to publish on")
	c.Flags().IntVar(&po.Deltas, "deltas", tuf.DefaultDeltas, "publish deltas from the `N` newest earlier releases of the channel (0: none)")
	c.Flags().BoolVar(&po.V1Twin, "v1-twin", false, "also publish a piship-archive/v1 copy of each v2 archive (for installations whose piship reads only v1)")
	c.Flags().StringArrayVar(&keys, "key", nil, "signing key `FILE` (repeatable: the targets, snapshot and timestamp keys; required)")
	_ = c.MarkFlagRequired("key")
	return c
}

func runRepoAdd(e *cli.Env, dir string, archives []string, ch string, keyFiles []string, po tuf.PublishOptions, registry string) int {
	if po.Deltas < 0 {
		return cli.FailIn(e, "repo add", errcode.Newf(errcode.ConfigInvalid, "--deltas %d: give how many earlier releases to make deltas from, 0 for none", po.Deltas))
	}
	keys, code := readKeys(e, "repo add", keyFiles)
	if code != cli.ExitOK {
		return code
	}
	r, err := tuf.Open(dir)
	if err != nil {
		return cli.FailIn(e, "repo add", err)
	}
	var rels []tuf.Release
	for _, a := range archives {
		if release.IsSums(a) { // a release set: every archive it lists
			set, err := tuf.ReleasesOfSet(a, ch)
			if err != nil {
				return cli.FailIn(e, "repo add", err)
			}
			rels = append(rels, set...)
			continue
		}
		rel, err := tuf.ReleaseOf(a, ch)
		if err != nil {
			return cli.FailIn(e, "repo add", err)
		}
		rels = append(rels, rel)
	}
	if registry != "" {
		if err := servedFrom(e.Ctx, registry, rels); err != nil {
			return cli.FailIn(e, "repo add", err)
		}
	}
	var said []string
	po.Logf = func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	if err := r.Publish(e.Ctx, rels, po, keys, keys, keys); err != nil {
		return cli.FailIn(e, "repo add", err)
	}
	for _, rel := range rels {
		fmt.Fprintf(e.Stdout, "published %s %s for %s on %s\n", tuf.TargetPath(ch, rel.Archive), rel.Version, rel.Target, ch)
		if rel.RegistryBlob != "" {
			fmt.Fprintf(e.Stdout, "  served from the registry: %s\n", rel.RegistryBlob)
		}
		if rel.Notes != "" {
			fmt.Fprintf(e.Stdout, "published %s: the release notes of %s (%s)\n", tuf.NotesPath(ch, rel.Archive), rel.Version, rel.Notes)
		}
	}
	for _, l := range said {
		fmt.Fprintln(e.Stdout, l)
	}
	fmt.Fprintf(e.Stdout, "repository %s: %s\n", dir, versions(r))
	return cli.ExitOK
}

func repoRefreshCmd(e *cli.Env) *cobra.Command {
	var keys []string
	c := &cobra.Command{
		Use:   "refresh DIR --key FILE...",
		Short: "sign snapshot and timestamp again with new versions and expiry (the scheduled CI job)",
		Long: `Signs the snapshot and timestamp of the TUF repository in DIR again, with new versions and
expiry, changing nothing else. Installations refuse an expired timestamp (a replay of old
metadata works only until then), so the timestamp is short-lived (14 days) and this is what
CI runs on a schedule, daily or weekly, with the online snapshot and timestamp keys.`,
		Example: `  piship repo refresh /srv/hello --key online.pem`,
		Args:    cli.ExactArgs("DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runRepoRefresh(e, args[0], keys))
		},
	}
	c.Flags().StringArrayVar(&keys, "key", nil, "signing key `FILE` (repeatable: the snapshot and timestamp keys; required)")
	_ = c.MarkFlagRequired("key")
	return c
}

func runRepoRefresh(e *cli.Env, dir string, keyFiles []string) int {
	keys, code := readKeys(e, "repo refresh", keyFiles)
	if code != cli.ExitOK {
		return code
	}
	r, err := tuf.Open(dir)
	if err != nil {
		return cli.FailIn(e, "repo refresh", err)
	}
	if err := r.Refresh(keys, keys); err != nil {
		return cli.FailIn(e, "repo refresh", err)
	}
	fmt.Fprintf(e.Stdout, "repository %s refreshed: %s; timestamp expires %s\n", dir, versions(r), r.Timestamp.Signed.Expires.UTC().Format(time.RFC3339))
	return cli.ExitOK
}

func repoRotateRootCmd(e *cli.Env) *cobra.Command {
	var keys, newKeys, thresholds, revoke []string
	c := &cobra.Command{
		Use:   "rotate-root DIR --key FILE... [--new-key ROLE=FILE...] [--threshold ROLE=N] [--revoke KEYID...]",
		Short: "write root N+1, signed by the root keys of N and of N+1",
		Long: `Writes root N+1 of the TUF repository in DIR: each role named by --new-key gets exactly the
keys given for it, --threshold sets a role's threshold, --revoke removes a TUF key id (as
repo status lists them) from every role; with none of these, root N+1 has the same keys and
a new expiry (a root must be re-signed within its year). Root N+1 must be signed by a
threshold of root N's root keys and of its own: --key gives root N's, --new-key files sign
too. When targets, snapshot or timestamp keys change, those roles are signed again by the
new keys in the same command, so installations trusting root N follow without a release.`,
		Example: `  piship repo rotate-root /srv/hello --key root.pem --new-key root=root-2027.pem
  piship repo rotate-root /srv/hello --key root.pem --key online.pem --new-key targets=release-2027.pem
  piship repo rotate-root /srv/hello --key root.pem`,
		Args: cli.ExactArgs("DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runRepoRotateRoot(e, args[0], keys, newKeys, thresholds, revoke))
		},
	}
	c.Flags().StringArrayVar(&keys, "key", nil, "signing key `FILE` (repeatable: root N's root keys, and the online keys of the roles signed again; required)")
	c.Flags().StringArrayVar(&newKeys, "new-key", nil, "`ROLE=FILE`: the new keys of ROLE in root N+1 (repeatable; they sign too)")
	c.Flags().StringArrayVar(&thresholds, "threshold", nil, "`ROLE=N`: ROLE's threshold in root N+1 (repeatable)")
	c.Flags().StringArrayVar(&revoke, "revoke", nil, "TUF `KEYID` to remove from every role (repeatable; repo status lists them)")
	_ = c.MarkFlagRequired("key")
	return c
}

func runRepoRotateRoot(e *cli.Env, dir string, keyFiles, newKeyFlags, thresholdFlags, revoke []string) int {
	signers, code := readKeys(e, "repo rotate-root", keyFiles)
	if code != cli.ExitOK {
		return code
	}
	change := tuf.RootChange{Keys: tuf.Roles[[]ed25519.PublicKey]{}, Revoke: revoke}
	for _, f := range newKeyFlags {
		role, file, err := roleValue("--new-key", f, "FILE")
		if err != nil {
			return cli.UsageErr(e, cli.CodeUsage, "%v", err)
		}
		k, err := tuf.ReadKey(file)
		if err != nil {
			return cli.FailIn(e, "repo rotate-root", err)
		}
		change.Keys[role] = append(change.Keys[role], k.Private.Public().(ed25519.PublicKey))
		signers = append(signers, k)
	}
	th, code := thresholdsOf(e, thresholdFlags)
	if code != cli.ExitOK {
		return code
	}
	change.Thresholds = th
	return rotate(e, "repo rotate-root", dir, change, signers)
}

func repoRotateKeyCmd(e *cli.Env) *cobra.Command {
	var keys, newKeys []string
	var role string
	var threshold int
	c := &cobra.Command{
		Use:   "rotate-key DIR --role ROLE --new-key FILE... --key FILE...",
		Short: "replace one role's keys (a root rotation)",
		Long: `Replaces the keys of one role of the TUF repository in DIR with the --new-key files, by a
root rotation (root N+1 signed by root N's root keys, --key) that also signs the role again
with the new keys. --threshold sets the role's threshold (default: the current one).

After a compromise of the targets key, rotate the snapshot and timestamp keys too: an
installation pushed ahead by the attacker recovers only when the keys of the roles it was
fast-forwarded on change.`,
		Example: `  piship repo rotate-key /srv/hello --role targets --new-key release-2027.pem --key root.pem --key online.pem
  piship repo rotate-key /srv/hello --role timestamp --new-key online-2027.pem --key root.pem --key online.pem`,
		Args: cli.ExactArgs("DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runRepoRotateKey(e, args[0], role, newKeys, threshold, keys))
		},
	}
	c.Flags().StringVar(&role, "role", "", "`ROLE` whose keys change: targets, snapshot, timestamp or root (required)")
	c.Flags().StringArrayVar(&newKeys, "new-key", nil, "the new key `FILE` of the role (repeatable; required)")
	c.Flags().IntVar(&threshold, "threshold", 0, "the role's new threshold `N` (default: the current one)")
	c.Flags().StringArrayVar(&keys, "key", nil, "signing key `FILE` (repeatable: root N's root keys and the online keys; required)")
	_ = c.MarkFlagRequired("role")
	_ = c.MarkFlagRequired("new-key")
	_ = c.MarkFlagRequired("key")
	return c
}

func runRepoRotateKey(e *cli.Env, dir, role string, newKeyFiles []string, threshold int, keyFiles []string) int {
	if !isRole(role) {
		return cli.UsageErr(e, cli.CodeUsage, "--role %q: a role is %s", role, strings.Join(tufRoles, ", "))
	}
	if threshold < 0 {
		return cli.UsageErr(e, cli.CodeUsage, "--threshold %d: a threshold is at least 1", threshold)
	}
	signers, code := readKeys(e, "repo rotate-key", keyFiles)
	if code != cli.ExitOK {
		return code
	}
	newKeys, code := readKeys(e, "repo rotate-key", newKeyFiles)
	if code != cli.ExitOK {
		return code
	}
	change := tuf.RootChange{Keys: tuf.Roles[[]ed25519.PublicKey]{}}
	for _, k := range newKeys {
		change.Keys[role] = append(change.Keys[role], k.Private.Public().(ed25519.PublicKey))
	}
	if threshold > 0 {
		change.Thresholds = tuf.Roles[int]{role: threshold}
	}
	return rotate(e, "repo rotate-key", dir, change, append(signers, newKeys...))
}

func repoRevokeCmd(e *cli.Env) *cobra.Command {
	var keys, ids []string
	c := &cobra.Command{
		Use:   "revoke DIR --key-id KEYID... --key FILE...",
		Short: "remove a key from every role (a root rotation)",
		Long: `Removes keys, by TUF key id (repo status lists each role's), from every role of the TUF
repository in DIR, by a root rotation signed by root N's root keys (--key), and signs the
roles they were in again. A role left with fewer keys than its threshold is refused: add
its new keys first (repo rotate-key).`,
		Example: `  piship repo revoke /srv/hello --key-id 5f1c0e... --key root.pem --key online.pem`,
		Args:    cli.ExactArgs("DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runRepoRevoke(e, args[0], ids, keys))
		},
	}
	c.Flags().StringArrayVar(&ids, "key-id", nil, "TUF `KEYID` to revoke (repeatable; required)")
	c.Flags().StringArrayVar(&keys, "key", nil, "signing key `FILE` (repeatable: root N's root keys and the keys of the roles signed again; required)")
	_ = c.MarkFlagRequired("key-id")
	_ = c.MarkFlagRequired("key")
	return c
}

func runRepoRevoke(e *cli.Env, dir string, ids, keyFiles []string) int {
	signers, code := readKeys(e, "repo revoke", keyFiles)
	if code != cli.ExitOK {
		return code
	}
	return rotate(e, "repo revoke", dir, tuf.RootChange{Revoke: ids}, signers)
}

// rotate is every command that writes a new root: one RotateRoot.
func rotate(e *cli.Env, what, dir string, change tuf.RootChange, signers []tuf.Key) int {
	r, err := tuf.Open(dir)
	if err != nil {
		return cli.FailIn(e, what, err)
	}
	from := r.Root.Signed.Version
	if err := r.RotateRoot(change, signers); err != nil {
		return cli.FailIn(e, what, err)
	}
	fmt.Fprintf(e.Stdout, "repository %s: root %d -> %d; %s\n", dir, from, r.Root.Signed.Version, versions(r))
	return cli.ExitOK
}

func repoStatusCmd(e *cli.Env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status DIR",
		Short: "show each role's version, expiry and keys, and the releases",
		Long: `Shows the TUF repository in DIR as published: the sha256 of root 1 (what installs pin),
each role's version, expiry, threshold and TUF key ids, and the releases by channel, each
with its release notes target (<channel>/<id>-<version>-<target>.notes.md, which piship update
prints) or "no release notes". Nothing is verified or written; run it before a refresh is due.`,
		Example: `  piship repo status /srv/hello
  piship repo status /srv/hello --json`,
		Args: cli.ExactArgs("DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runRepoStatus(e, args[0], asJSON))
		},
	}
	cli.JSONFlag(c, &asJSON)
	return c
}

func runRepoStatus(e *cli.Env, dir string, asJSON bool) int {
	r, err := tuf.Open(dir)
	if err != nil {
		return cli.FailIn(e, "repo status", err)
	}
	root, err := r.RootBytes(1)
	if err != nil {
		return cli.FailIn(e, "repo status", err)
	}
	doc := RepoStatusJSON(dir, tuf.RootSHA256(root), r.Status())
	if asJSON {
		cli.PrintJSON(e, doc)
		return cli.ExitOK
	}
	printRepoStatus(e.Stdout, doc)
	return cli.ExitOK
}

func printRepoStatus(w io.Writer, d RepoStatusDoc) {
	fmt.Fprintf(w, "repository %s\nroot 1 sha256:%s\n", d.Dir, d.InitialRootSHA256)
	// Keys by name; the ids (what repo revoke --key-id takes) once each,
	// below.
	var ids, names []string
	for _, r := range d.Roles {
		shown := make([]string, len(r.KeyIDs))
		for i, id := range r.KeyIDs {
			name := ""
			if i < len(r.KeyNames) {
				name = r.KeyNames[i]
			}
			shown[i] = cmp.Or(name, id)
			if !slices.Contains(ids, id) {
				ids, names = append(ids, id), append(names, cmp.Or(name, "(unnamed)"))
			}
		}
		fmt.Fprintf(w, "  %-9s version %-4d expires %s  %s: %s\n", r.Role, r.Version, r.Expires, canon.Of(r.Threshold, len(r.KeyIDs), "key"), strings.Join(shown, " "))
	}
	fmt.Fprintln(w, "keys (name, TUF key id: what repo revoke --key-id takes):")
	rows := make([][]string, len(ids))
	for i, id := range ids {
		rows[i] = []string{names[i], id}
	}
	writeColumns(w, "  ", rows)
	if len(d.Releases) == 0 {
		fmt.Fprintln(w, "no releases")
	}
	for _, r := range d.Releases {
		if r.From != "" {
			fmt.Fprintf(w, "  %s delta %s -> %s for %s on %s (%d bytes, sha256 %s)\n", r.Path, r.From, r.Version, r.Target, r.Channel, r.Length, r.SHA256)
			continue
		}
		fmt.Fprintf(w, "  %s %s for %s on %s (%s, %d bytes, sha256 %s)\n", r.Path, r.Version, r.Target, r.Channel, r.Format, r.Length, r.SHA256)
		if r.RegistryBlob != "" {
			fmt.Fprintf(w, "    served from the registry: %s\n", r.RegistryBlob)
		}
		if r.Notes != "" {
			fmt.Fprintf(w, "    release notes %s (%d bytes)\n", r.Notes, r.NotesLength)
		} else {
			fmt.Fprintln(w, "    no release notes")
		}
	}
}

// versions is the one-line summary of what a command left published.
func versions(r *tuf.Repository) string {
	return fmt.Sprintf("root %d, targets %d, snapshot %d, timestamp %d", r.Root.Signed.Version, r.Targets.Signed.Version,
		r.Snapshot.Signed.Version, r.Timestamp.Signed.Version)
}

// readKeys reads key files as tuf.ReadKey does (a missing or foreign
// file is CONFIG_INVALID naming it).
func readKeys(e *cli.Env, what string, files []string) ([]tuf.Key, int) {
	var keys []tuf.Key
	for _, f := range files {
		k, err := tuf.ReadKey(f)
		if err != nil {
			return nil, cli.FailIn(e, what, err)
		}
		keys = append(keys, k)
	}
	return keys, cli.ExitOK
}

// thresholdsOf parses --threshold ROLE=N flags (a command line mistake is
// USAGE_INVALID).
func thresholdsOf(e *cli.Env, flags []string) (tuf.Roles[int], int) {
	th := tuf.Roles[int]{}
	for _, f := range flags {
		role, v, err := roleValue("--threshold", f, "N")
		if err != nil {
			return nil, cli.UsageErr(e, cli.CodeUsage, "%v", err)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, cli.UsageErr(e, cli.CodeUsage, "--threshold %s: N is a whole number of keys, at least 1", f)
		}
		th[role] = n
	}
	return th, cli.ExitOK
}

// roleValue splits a ROLE=VALUE flag value.
func roleValue(flag, s, what string) (string, string, error) {
	role, v, ok := strings.Cut(s, "=")
	if !ok || v == "" {
		return "", "", fmt.Errorf("%s %q: write %s ROLE=%s, ROLE one of %s", flag, s, flag, what, strings.Join(tufRoles, ", "))
	}
	if !isRole(role) {
		return "", "", fmt.Errorf("%s %q: %q is not a role; a role is %s", flag, s, role, strings.Join(tufRoles, ", "))
	}
	return role, v, nil
}

func isRole(s string) bool {
	for _, r := range tufRoles {
		if r == s {
			return true
		}
	}
	return false
}
