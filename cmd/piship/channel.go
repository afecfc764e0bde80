package main

import (
	"crypto/ed25519"
	"fmt"

	"github.com/spf13/cobra"

	"piship.dev/piship/stages/channel"
)

func keygenCmd(e *env) *cobra.Command {
	var id string
	var force bool
	c := &cobra.Command{
		Use:     "keygen FILE --id KEYID",
		GroupID: groupDist,
		Short:   "make an Ed25519 key for a TUF repository role",
		Long: `Writes a new Ed25519 private key to FILE (mode 0600, refused if FILE exists unless --force)
and prints its public key and fingerprint. piship repo init and the other repo commands
take these files (--key ROLE=FILE, --key FILE).`,
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
	fmt.Fprintf(e.stdout, "\nSign a TUF repository with it: piship repo init DIR --key root=%s --key targets=%s ...\n", file, file)
	return exitOK
}
