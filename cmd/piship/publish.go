package main

// piship publish: a release set pushed to an OCI registry, one artifact
// per target and an index per version (stages/oci release.go's layout),
// after the checks verify-release makes. The registry is storage: what
// an update trusts is still the TUF repository, which may name the
// archives' registry blobs (repo add --registry).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/fleet"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/stages/tuf"
	"piship.dev/piship/stages/verify"
)

func publishCmd(e *cli.Env) *cobra.Command {
	var to string
	var asJSON bool
	c := &cobra.Command{
		Use:     "publish RELEASE_DIR|SET --to oci://HOST/REPOSITORY",
		GroupID: cli.GroupDist,
		Short:   "push a release to an OCI registry: an artifact per target, an index per version",
		Long: `Pushes a release set (<id>-<version>.SHA256SUMS, or the releases directory piship release
wrote that holds one: DIST/dist/releases, or DIST/dist, or DIST) to an OCI registry, as Homebrew keeps its bottles on
GHCR. Every archive is first verified as verify-release does (held to the set's digest,
extracted under the archive rules, the release rules applied); one that fails stops the
publish before anything is pushed.

Each target becomes one artifact tagged <version>-<target> (artifact type
application/vnd.piship.release.v1): the archive, its .sha256, its build-info.json and
<name>/release.json (and <name>/notes.md when there are notes), each a layer titled with its
file name, so oras pull writes the same files; annotations give the id, version, target and
lockSha256 (the lock digest release.json records). An image index over the targets is
tagged <version> ('+' of a version is '_' in a tag). The same bytes give the same digests,
so publishing again is harmless.

Credentials come from the Docker config file and its credential helpers (docker login,
oras login); loopback registries are spoken to over plain HTTP, others over HTTPS. A
request may take 10 minutes, the publish 30 in all. The update side: piship repo add
--registry names each archive's registry blob in the TUF repository, and piship update
then downloads it from the registry, held to the signed length and sha256.`,
		Example: `  piship publish dist/releases --to oci://ghcr.io/acme/hello
  piship publish dist/releases/hello-1.1.0.SHA256SUMS --to oci://127.0.0.1:5000/acme/hello --json`,
		Args: cli.ExactArgs("RELEASE_DIR|SET"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runPublish(e, args[0], to, asJSON))
		},
	}
	c.Flags().StringVar(&to, "to", "", "the registry repository, `oci://HOST[:PORT]/REPOSITORY` (required)")
	_ = c.MarkFlagRequired("to")
	cli.JSONFlag(c, &asJSON)
	return c
}

// findSet is the release set src names: a set file, or the one set of a
// releases directory, of a dist directory's releases/, or of a
// distribution's dist/releases/ (the first of them that holds a set).
func findSet(src string) (string, error) {
	if release.IsSums(src) {
		return src, nil
	}
	fi, err := os.Stat(src)
	if err != nil {
		return "", errcode.Newf(errcode.ConfigInvalid, "%v: give the releases directory piship release wrote (dist/releases) or its <id>-<version>%s", err, release.SumsSuffix)
	}
	if !fi.IsDir() {
		return "", errcode.Newf(errcode.ConfigInvalid, "%s is not a release set: give the releases directory piship release wrote (dist/releases) or its <id>-<version>%s", src, release.SumsSuffix)
	}
	for _, dir := range []string{src, filepath.Join(src, "releases"), filepath.Join(src, "dist", "releases")} {
		sets, _ := filepath.Glob(filepath.Join(dir, "*"+release.SumsSuffix))
		switch len(sets) {
		case 0:
			continue
		case 1:
			return sets[0], nil
		}
		return "", errcode.Newf(errcode.ConfigInvalid, "%s holds %d release sets (%s): give the one to publish", dir, len(sets), strings.Join(baseNames(sets), ", "))
	}
	return "", errcode.Newf(errcode.ConfigInvalid, "%s holds no release set (<id>-<version>%s): run piship release first, or give the set file", src, release.SumsSuffix)
}

func baseNames(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}

func runPublish(e *cli.Env, src, to string, asJSON bool) int {
	ref, err := oci.ParseRef(to)
	if err != nil {
		return cli.FailIn(e, "publish", err)
	}
	sums, err := findSet(src)
	if err != nil {
		return cli.FailIn(e, "publish", err)
	}
	set, reps, err := verify.Set(e.Ctx, sums)
	if err != nil {
		return cli.FailIn(e, "publish", err)
	}
	for _, rep := range reps {
		if err := rep.Err(); err != nil {
			name := rep.Release
			if name == "" {
				name = filepath.Base(rep.Source)
			}
			why := strings.TrimPrefix(err.Error(), errcode.IntegrityFailed+": ")
			return cli.FailIn(e, "publish", errcode.Newf(errcode.IntegrityFailed, "%s is not a release that installs (%s): nothing was pushed; piship verify-release %s says more", name, why, sums))
		}
	}
	repo, err := oci.Open(ref, oci.Options{Budget: oci.TransferBudget()})
	if err != nil {
		return cli.FailIn(e, "publish", err)
	}
	pub, err := fleet.Publish(e.Ctx, repo, set)
	if err != nil {
		return cli.FailIn(e, "publish", err)
	}
	doc := publishJSON(repo, set, pub)
	if asJSON {
		cli.PrintJSON(e, doc)
		return cli.ExitOK
	}
	for _, t := range doc.Targets {
		fmt.Fprintf(e.Stdout, "pushed %s %s %s: %s (%s, %s)\n", doc.ID, doc.Version, t.Target, repo.Describe(t.Tag), t.Digest, canon.Count(len(t.Files), "file"))
		for _, f := range t.Files {
			fmt.Fprintf(e.Stdout, "  %s %s (%d bytes)\n", f.Name, f.Digest, f.Bytes)
		}
	}
	fmt.Fprintf(e.Stdout, "pushed the index %s (%s, %s)\n", repo.Describe(doc.Index.Tag), doc.Index.Digest, canon.Count(len(doc.Targets), "target"))
	fmt.Fprintf(e.Stdout, "To serve updates from the registry, name its blobs in the TUF repository: piship repo add DIR %s --registry %s --key TARGETS.pem --key ONLINE.pem\n", sums, ref)
	return cli.ExitOK
}

// publishJSON is what publish pushed as piship-publish/v1.
func publishJSON(repo *oci.Repo, set *release.Sums, p *fleet.Published) PublishDoc {
	doc := PublishDoc{Schema: cli.Schema("publish"), Registry: repo.Ref.String(), ID: p.ID, Version: p.Version, Set: set.Path,
		Index: PublishIndexDoc{Tag: p.IndexTag, Digest: p.IndexDigest}, Targets: []PublishTargetDoc{}}
	for _, t := range p.Targets {
		td := PublishTargetDoc{Target: t.Target, Tag: t.Tag, Digest: t.Digest, LockSHA256: t.LockSHA256, ArchiveBlob: t.ArchiveBlob, Files: []PublishFileDoc{}}
		for _, f := range t.Layers {
			td.Files = append(td.Files, PublishFileDoc{Name: f.Name, Digest: f.Digest, Bytes: f.Bytes})
		}
		doc.Targets = append(doc.Targets, td)
	}
	return doc
}

// servedFrom opens the registry repo add --registry names and records, in
// each release, its archive's blob there (fleet.ServedFrom).
func servedFrom(ctx context.Context, registry string, rels []tuf.Release) error {
	ref, err := oci.ParseRef(registry)
	if err != nil {
		return err
	}
	repo, err := oci.Open(ref, oci.Options{Budget: oci.TransferBudget()})
	if err != nil {
		return err
	}
	return fleet.ServedFrom(ctx, repo, rels)
}
