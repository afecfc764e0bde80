package main

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/stages/signkey"
)

func keygenCmd(e *cli.Env) *cobra.Command {
	var id string
	var force bool
	c := &cobra.Command{
		Use:     "keygen FILE [--id NAME]",
		GroupID: cli.GroupDist,
		Short:   "make an Ed25519 key for a TUF repository role",
		Long: `Writes a new Ed25519 private key to FILE (mode 0600, refused if FILE exists unless --force)
and prints its public key and fingerprint. The key's NAME (--id; default: FILE's name
without its extension, root.pem -> root) is recorded in the file; piship's messages and
piship repo status name the key by it.

A TUF repository wants separate keys: a root key that only signs root (keep it offline:
it decides which keys are trusted, and replaces a lost or stolen one), a targets key that
signs releases (offline too, used at release time), and an online key for snapshot and
timestamp, which the scheduled refresh uses. piship repo init and the other repo commands
take these files (--key ROLE=FILE, --key FILE).`,
		Example: `  piship keygen root.pem && piship keygen targets.pem && piship keygen online.pem
  piship repo init /srv/hello --key root=root.pem --key targets=targets.pem --key snapshot=online.pem --key timestamp=online.pem
  piship keygen release-2027.pem --id release-2027`,
		Args: cli.ExactArgs("FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runKeygen(e, args[0], id, force))
		},
	}
	c.Flags().StringVar(&id, "id", "", "the key's `NAME`, recorded in the file and shown by piship's messages and repo status (default: FILE's name without its extension)")
	c.Flags().BoolVar(&force, "force", false, "overwrite an existing key file")
	return c
}

// keyName is the name keygen records for FILE without --id: its base name
// without the extension (root.pem -> root).
func keyName(file string) string {
	base := filepath.Base(file)
	if name := strings.TrimSuffix(base, filepath.Ext(base)); name != "" {
		return name
	}
	return base
}

// runKeygen makes an Ed25519 signing key for a TUF repository role.
func runKeygen(e *cli.Env, file, id string, force bool) int {
	chosen := ""
	if id == "" {
		id = keyName(file)
		if msg := signkey.CheckKeyID(id); msg != "" {
			return cli.UsageErr(e, cli.CodeUsage, "%s has no name piship can use as the key's (%q: %s): give one with --id NAME", file, id, strings.TrimSuffix(msg, "."))
		}
		chosen = " (named after the file; --id NAME names it otherwise)"
	}
	priv, err := signkey.GenerateKey(id)
	if err != nil {
		return cli.Fail(e, err)
	}
	if err := signkey.WritePrivateKey(file, id, priv, force); err != nil {
		return cli.Fail(e, err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	fmt.Fprintf(e.Stdout, "key %s%s written to %s (private, 0600)\npublic key: %s\nfingerprint: %s\n",
		id, chosen, file, signkey.PublicKeyBase64(pub), signkey.Fingerprint(pub))
	fmt.Fprintf(e.Stdout, "\nA TUF repository takes one key per role: piship repo init DIR --key root=ROOT.pem --key targets=TARGETS.pem --key snapshot=ONLINE.pem --key timestamp=ONLINE.pem\n")
	return cli.ExitOK
}
