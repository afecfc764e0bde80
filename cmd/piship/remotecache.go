package main

import (
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"piship.dev/piship/cache"
	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/remotecache"
	"piship.dev/piship/stages/signkey"
	"piship.dev/piship/stages/stage/errcode"
)

// remoteEnv names the remote cache when --remote-cache is not given.
const remoteEnv = "PISHIP_REMOTE_CACHE"

// remoteOpts are the --remote-cache flags of build, release and run.
type remoteOpts struct {
	url   string
	mode  string
	key   string
	trust []string
}

// remoteFlags adds the remote cache's flags.
func remoteFlags(fs *pflag.FlagSet, o *remoteOpts) {
	fs.StringVar(&o.url, "remote-cache", "", "share the action and runtime caches through an OCI registry, `oci://HOST[:PORT]/REPO` (also "+remoteEnv+"); read through on a local miss")
	fs.StringVar(&o.mode, "remote-cache-mode", "read", "`MODE` read (pull only: pull requests) or readwrite (also push new entries, signed: trusted branches only)")
	fs.StringVar(&o.key, "remote-cache-key", "", "the piship keygen key `FILE` that signs what readwrite pushes")
	fs.StringSliceVar(&o.trust, "remote-cache-trust", nil, "take only entries signed by this public key, `PUBKEY` as piship keygen prints it (repeatable or comma-separated)")
}

// devConfig is e.DevConfig with the remote cache the flags ask for; on a
// bad combination it prints the error and returns its exit code.
func devConfig(e *cli.Env, rc cli.RunConfig, o remoteOpts) (pipelines.Config, int, bool) {
	cfg := e.DevConfig(rc)
	s, err := o.session(e)
	if err != nil {
		return cfg, cli.UsageErrOf(e, err), false
	}
	cfg.Remote, cfg.RemoteWait = s, oci.RunBudget
	return cfg, 0, true
}

// session checks the flags and opens the remote cache (no request yet);
// nil without --remote-cache and PISHIP_REMOTE_CACHE.
func (o remoteOpts) session(e *cli.Env) (*cache.RemoteSession, error) {
	url := o.url
	if url == "" {
		url = e.Getenv(remoteEnv)
	}
	write := false
	switch o.mode {
	case "read", "":
	case "readwrite":
		write = true
	default:
		return nil, errcode.Newf(errcode.UsageInvalid, "--remote-cache-mode %q: give read (pull only, what pull requests use) or readwrite (also push, what trusted branches use)", o.mode)
	}
	if url == "" {
		if write || o.key != "" || len(o.trust) > 0 {
			return nil, errcode.Newf(errcode.UsageInvalid, "--remote-cache-mode, --remote-cache-key and --remote-cache-trust need a remote cache: give --remote-cache oci://HOST/REPO (or set %s)", remoteEnv)
		}
		return nil, nil
	}
	ref, err := oci.ParseRef(url)
	if err != nil {
		return nil, err
	}
	var signer ed25519.PrivateKey
	switch {
	case write && o.key == "":
		return nil, errcode.Newf(errcode.UsageInvalid, "--remote-cache-mode readwrite signs every entry it pushes: give --remote-cache-key FILE (piship keygen FILE writes one; pin its public key with --remote-cache-trust on the readers)")
	case !write && o.key != "":
		return nil, errcode.Newf(errcode.UsageInvalid, "--remote-cache-key signs what readwrite pushes: give --remote-cache-mode readwrite with it, or leave it out (a read-only run pushes nothing)")
	case write:
		_, signer, err = signkey.ReadPrivateKey(o.key)
		if err != nil {
			return nil, fmt.Errorf("--remote-cache-key: %w", err)
		}
	}
	var trusted []ed25519.PublicKey
	for _, t := range o.trust {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		pub, err := signkey.ParsePublicKey(t)
		if err != nil {
			return nil, fmt.Errorf("--remote-cache-trust %s: %w", t, err)
		}
		trusted = append(trusted, pub)
	}
	if len(trusted) == 0 && !write {
		return nil, errcode.Newf(errcode.UsageInvalid, "a remote cache is read only through pinned keys: give --remote-cache-trust PUBKEY, the public key piship keygen printed for the key that writes %s", ref)
	}
	s := &cache.RemoteSession{Write: write}
	s.SetLog(e.Stderr)
	repo, err := oci.Open(ref, oci.Options{Budget: &oci.Budget{Warn: s.Warn}})
	if err != nil {
		return nil, err
	}
	s.Remote = remotecache.New(repo, signer, trusted)
	return s, nil
}
