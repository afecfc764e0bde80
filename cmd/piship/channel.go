package main

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"piship.dev/piship/stages/channel"
)

func keygenCmd(e *env) *cobra.Command {
	var id string
	var force bool
	c := &cobra.Command{
		Use:     "keygen FILE --id KEYID",
		GroupID: groupDist,
		Short:   "make an Ed25519 key for signing update channels",
		Long: `Writes a new Ed25519 private key to FILE (mode 0600, refused if FILE exists unless --force)
and prints its public key and fingerprint with the updates block that trusts it in
distribution.hcl.`,
		Example: "  piship keygen release.pem --id release-2026",
		Args:    exactArgs("FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			return done(runKeygen(e, args[0], id, force))
		},
	}
	c.Flags().StringVar(&id, "id", "", "`KEYID` recorded with the key and in signatures (required)")
	c.Flags().BoolVar(&force, "force", false, "overwrite an existing key file")
	_ = c.MarkFlagRequired("id")
	return c
}

// runKeygen makes an Ed25519 signing key for update channels.
func runKeygen(e *env, file, id string, force bool) int {
	priv, err := channel.GenerateKey(id)
	if err != nil {
		return fail(e, err)
	}
	if err := channel.WritePrivateKey(file, id, priv, force); err != nil {
		return fail(e, err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	fmt.Fprintf(e.stdout, "key %s written to %s (private, 0600)\npublic key: %s\nfingerprint: %s\n",
		id, file, channel.PublicKeyBase64(pub), channel.Fingerprint(pub))
	fmt.Fprintf(e.stdout, "\nTrust it in distribution.hcl:\n  updates {\n    keys = [{ id = %q, public_key = %q }]\n    threshold = 1\n  }\n",
		id, channel.PublicKeyBase64(pub))
	return exitOK
}

func signChannelCmd(e *env) *cobra.Command {
	var o signOpts
	c := &cobra.Command{
		Use:     "sign-channel DIR ARCHIVE... --key FILE",
		GroupID: groupDist,
		Short:   "sign an update channel over release archives",
		Long: `Writes the channel document of DIR (channel.json and one signature per --key) over the
release archives given, with the next sequence number (or --sequence) and an expiry
--expires-days from now. Installed releases update from DIR when their lock trusts enough
of the keys.`,
		Example: `  piship sign-channel /srv/channel /tmp/out/releases/hello-1.0.0-linux-x64.tar.gz --key release.pem
  piship sign-channel /srv/channel a.tar.gz b.tar.gz --channel beta --key k1.pem --key k2.pem --expires-days 7`,
		Args: rangeArgs(1, -1),
		RunE: func(c *cobra.Command, args []string) error {
			return done(runSignChannel(e, args[0], args[1:], o))
		},
	}
	c.Flags().StringVar(&o.name, "channel", "stable", "`CHANNEL` name")
	c.Flags().StringArrayVar(&o.keys, "key", nil, "private key `FILE` (repeatable: one signature per key; required)")
	c.Flags().Int64Var(&o.sequence, "sequence", 0, "sequence number `N` (default: the current one + 1)")
	c.Flags().IntVar(&o.days, "expires-days", 30, "`DAYS` until the signed channel expires, 1 to 3650")
	_ = c.MarkFlagRequired("key")
	return c
}

// signOpts are sign-channel's flags.
type signOpts struct {
	name     string
	keys     []string
	sequence int64
	days     int
}

// runSignChannel signs a channel document over release archives.
func runSignChannel(e *env, dir string, archives []string, f signOpts) int {
	expiresIn, err := channel.ExpiresInDays(f.days)
	if err != nil {
		return failIn(e, "sign-channel", err)
	}
	o := channel.SignOptions{Channel: f.name, Sequence: f.sequence, ExpiresIn: expiresIn}
	for _, k := range f.keys {
		id, priv, err := channel.ReadPrivateKey(k)
		if err != nil {
			return fail(e, err)
		}
		o.Keys = append(o.Keys, channel.KeyPair{ID: id, Private: priv})
	}
	c, err := channel.Sign(dir, archives, o)
	if err != nil {
		return failIn(e, "sign-channel", err)
	}
	fmt.Fprintf(e.stdout, "signed %s channel %s of %s: sequence %d, %d releases, expires %s\n",
		dir, c.Channel, c.Distribution, c.Sequence, len(c.Releases), c.Expires.Format(time.RFC3339))
	return exitOK
}
