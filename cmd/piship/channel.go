package main

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"piship.dev/piship/stages/channel"
)

// cmdKeygen makes an Ed25519 signing key for update channels.
func cmdKeygen(e *env, args []string) int {
	fs := newFlags(e, "keygen")
	id := fs.String("id", "", "key id recorded with the key and in signatures (required)")
	force := fs.Bool("force", false, "overwrite an existing key file")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 || *id == "" {
		return usageErr(e, "usage: piship keygen FILE --id KEYID [--force]")
	}
	priv, err := channel.GenerateKey(*id)
	if err != nil {
		return usageErr(e, "%v", err)
	}
	if err := channel.WritePrivateKey(pos[0], *id, priv, *force); err != nil {
		return usageErr(e, "%v", err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	fmt.Fprintf(e.stdout, "key %s written to %s (private, 0600)\npublic key: %s\nfingerprint: %s\n",
		*id, pos[0], channel.PublicKeyBase64(pub), channel.Fingerprint(pub))
	fmt.Fprintf(e.stdout, "\nTrust it in distribution.hcl:\n  updates {\n    keys = [{ id = %q, public_key = %q }]\n    threshold = 1\n  }\n",
		*id, channel.PublicKeyBase64(pub))
	return exitOK
}

// cmdSignChannel signs a channel document over release archives.
func cmdSignChannel(e *env, args []string) int {
	fs := newFlags(e, "sign-channel")
	name := fs.String("channel", "stable", "channel name")
	var keys multiFlag
	fs.Var(&keys, "key", "private key file (repeatable: one signature per key)")
	sequence := fs.Int64("sequence", 0, "sequence number (default: the current one + 1)")
	days := fs.Int("expires-days", 30, "days until the signed channel expires")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) < 1 || len(keys) == 0 {
		return usageErr(e, "usage: piship sign-channel DIR ARCHIVE... --channel c --key FILE [--key FILE ...] [--sequence N] [--expires-days N]")
	}
	expiresIn, err := channel.ExpiresInDays(*days)
	if err != nil {
		return usageErr(e, "sign-channel: %v", err)
	}
	o := channel.SignOptions{Channel: *name, Sequence: *sequence, ExpiresIn: expiresIn}
	for _, k := range keys {
		id, priv, err := channel.ReadPrivateKey(k)
		if err != nil {
			return usageErr(e, "%v", err)
		}
		o.Keys = append(o.Keys, channel.KeyPair{ID: id, Private: priv})
	}
	c, err := channel.Sign(pos[0], pos[1:], o)
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: sign-channel: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "signed %s channel %s of %s: sequence %d, %d releases, expires %s\n",
		pos[0], c.Channel, c.Distribution, c.Sequence, len(c.Releases), c.Expires.Format(time.RFC3339))
	return exitOK
}
