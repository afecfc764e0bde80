package distribution

import (
	"crypto/ed25519"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/channel"
)

// The updates block: where installed copies of the distribution find new
// releases, and which keys they trust to sign the channel.

// DefaultChannel is updates.channel when it is not written.
const DefaultChannel = "stable"

// Updates is the updates block.
type Updates struct {
	// Channel is the default channel: <Channel>.json in Source.
	Channel string
	// Source is the channel directory as written: an absolute path, a
	// file:// URL, an https:// URL, or an http:// URL of a loopback host
	// (channel.OpenSource reads it).
	Source string
	// Keys are the trusted channel keys in the order written: distinct ids
	// and distinct public keys.
	Keys []UpdateKey
	// Threshold is how many distinct keys must sign a channel:
	// 1 <= Threshold <= len(Keys).
	Threshold int
}

// UpdateKey is a trusted channel key.
type UpdateKey struct {
	ID        string
	PublicKey ed25519.PublicKey
	// Fingerprint is channel.Fingerprint of the key: "sha256:<hex>".
	Fingerprint string
}

// Trust is what installations of distribution id check a channel
// against. Installations take it from the installed release's lock
// (Lock.UpdateTrust), not from a distribution directory.
func (u *Updates) Trust(id string) channel.Trust {
	t := channel.Trust{Distribution: id, Keys: map[string]ed25519.PublicKey{}, Threshold: u.Threshold}
	for _, k := range u.Keys {
		t.Keys[k.ID] = k.PublicKey
	}
	return t
}

var keyFields = []string{"id", "public_key"}

func (dc *decoder) updates(blk *hcl.Block) {
	d := dc.d
	d.ranges["updates"] = blk.DefRange
	content := dc.content(blk.Body, updatesSchema, "the updates block", "updates.")
	attrs := content.Attributes
	u := &Updates{Channel: DefaultChannel, Threshold: 1}
	ok := true
	if v, r, vok := dc.str(attrs, "updates.channel"); vok {
		if msg := channel.CheckName(v); msg != "" {
			detail := fmt.Sprintf("updates.channel %q: %s It names the file %s in the source.", v, msg, channel.DocName("<channel>"))
			if low := strings.ToLower(v); low != v && channel.CheckName(low) == "" {
				detail += fmt.Sprintf(" Did you mean %q?", low)
			}
			dc.add(errDiag("Invalid channel name", detail, r))
			ok = false
		} else {
			u.Channel = v
		}
	} else if _, written := attrs["channel"]; written {
		ok = false
	}
	if v, r, vok := dc.str(attrs, "updates.source"); vok {
		if msg := checkUpdateSource(v); msg != "" {
			dc.add(errDiag("Invalid update source", fmt.Sprintf("updates.source %q: %s", v, msg), r))
			ok = false
		} else {
			u.Source = v
		}
	} else {
		ok = false
	}
	keysOK := false
	if attr, written := attrs["keys"]; written {
		u.Keys, keysOK = dc.updateKeys(attr)
		ok = ok && keysOK
	} else {
		ok = false // hcl reported it missing
	}
	if n, r, nok := dc.integer(attrs, "updates.threshold"); nok {
		switch {
		case n.Sign() < 1:
			dc.add(errDiag("Invalid threshold",
				fmt.Sprintf("updates.threshold %s: at least one trusted key must sign a channel; write a number from 1 to the number of keys.", n), r))
			ok = false
		case n.Cmp(big.NewInt(int64(len(u.Keys)))) > 0:
			if keysOK { // else the keys' own errors say what is wrong
				listed := fmt.Sprintf("the %d keys listed", len(u.Keys))
				if len(u.Keys) == 1 {
					listed = "the one key listed"
				}
				dc.add(errDiag("Invalid threshold",
					fmt.Sprintf("updates.threshold %s is more than %s: no channel could ever be accepted. Add keys or lower the threshold.", n, listed), r))
			}
			ok = false
		default:
			u.Threshold = int(n.Int64())
		}
	} else if _, written := attrs["threshold"]; written {
		ok = false
	}
	if ok {
		d.Updates = u
	}
}

// updateKeys decodes keys = [{ id = "...", public_key = "..." }, ...].
func (dc *decoder) updateKeys(attr *hcl.Attribute) ([]UpdateKey, bool) {
	d := dc.d
	r := attr.Expr.Range()
	d.ranges["updates.keys"] = r
	const example = `keys = [{ id = "release-2026", public_key = "<base64 of the key's SubjectPublicKeyInfo DER, as piship keygen prints it>" }]`
	exprs, diags := hcl.ExprList(attr.Expr)
	if diags.HasErrors() {
		if v, ok := dc.value(attr.Expr); ok {
			dc.add(typeDiag(r, "updates.keys", "a list of { id, public_key } objects: "+example, v))
		}
		return nil, false
	}
	if len(exprs) == 0 {
		dc.add(errDiag("No update key", "updates.keys needs at least one trusted key, or no installed copy could accept a channel: "+example+".", r))
		return nil, false
	}
	var keys []UpdateKey
	ok := true
	ids := map[string]int{}
	pubs := map[string]int{}
	for i, e := range exprs {
		key := fmt.Sprintf("updates.keys[%d]", i)
		d.ranges[key] = e.Range()
		k, kok := dc.updateKey(e, key)
		if !kok {
			ok = false
			continue
		}
		if j, dup := ids[k.ID]; dup {
			dc.add(errDiag("Duplicate key id", fmt.Sprintf("key id %q is already listed at %s.", k.ID, d.Pos(fmt.Sprintf("updates.keys[%d].id", j))), d.Range(key+".id")))
			ok = false
			continue
		}
		if j, dup := pubs[string(k.PublicKey)]; dup {
			dc.add(errDiag("Duplicate public key",
				fmt.Sprintf("key %q has the same public key as %q (%s): a threshold counts distinct keys, so list each key once.", k.ID, keys[j].ID, d.Pos(fmt.Sprintf("updates.keys[%d].public_key", j))),
				d.Range(key+".public_key")))
			ok = false
			continue
		}
		ids[k.ID] = i
		pubs[string(k.PublicKey)] = len(keys)
		keys = append(keys, k)
	}
	return keys, ok
}

func (dc *decoder) updateKey(expr hcl.Expression, key string) (UpdateKey, bool) {
	fields, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		dc.add(errDiag("Incorrect attribute value type",
			fmt.Sprintf("%s must be an object { id = \"<key id>\", public_key = \"<base64>\" }.", key), expr.Range()))
		return UpdateKey{}, false
	}
	var k UpdateKey
	have := map[string]bool{}
	ok := true
	for _, kv := range fields {
		kval, kd := kv.Key.Value(nil)
		if kd.HasErrors() || kval.IsNull() || !kval.IsKnown() || kval.Type() != cty.String {
			dc.add(errDiag("Invalid key attribute", "A key's attributes are id and public_key.", kv.Key.Range()))
			ok = false
			continue
		}
		field := kval.AsString()
		if !slices.Contains(keyFields, field) {
			detail := fmt.Sprintf("%s has no attribute %q.", key, field)
			if s := suggest(field, keyFields); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s)
			} else {
				detail += " A key takes id and public_key."
			}
			dc.add(errDiag("Unsupported argument", detail, kv.Key.Range()))
			ok = false
			continue
		}
		if have[field] {
			dc.add(errDiag("Duplicate key attribute", fmt.Sprintf("%s sets %s twice.", key, field), kv.Key.Range()))
			ok = false
			continue
		}
		have[field] = true
		v, r, vok := dc.exprString(kv.Value, key+"."+field, key+"."+field)
		if !vok {
			ok = false
			continue
		}
		switch field {
		case "id":
			if msg := channel.CheckKeyID(v); msg != "" {
				dc.add(errDiag("Invalid key id", fmt.Sprintf("%s id %q: %s Signature files name the key by it.", key, v, msg), r))
				ok = false
				continue
			}
			k.ID = v
		case "public_key":
			pub, err := channel.ParsePublicKey(v)
			if err != nil {
				msg := err.Error()
				if e, isErr := channel.AsError(err); isErr {
					msg = e.Msg
				}
				dc.add(errDiag("Invalid public key", fmt.Sprintf("%s public_key: %s.", key, strings.TrimSuffix(msg, ".")), r))
				ok = false
				continue
			}
			k.PublicKey = pub
			k.Fingerprint = channel.Fingerprint(pub)
		}
	}
	for _, field := range keyFields {
		if !have[field] {
			what := "the key's name, as its signatures give it (piship keygen --id)"
			if field == "public_key" {
				what = "the base64 of the key's SubjectPublicKeyInfo DER, as piship keygen prints it"
			}
			dc.add(errDiag("Missing required argument", fmt.Sprintf("%s requires %s: %s.", key, field, what), expr.Range()))
			ok = false
		}
	}
	return k, ok
}

// integer decodes a whole-number attribute.
func (dc *decoder) integer(attrs hcl.Attributes, key string) (*big.Int, hcl.Range, bool) {
	attr, ok := attrs[lastName(key)]
	if !ok {
		return nil, hcl.Range{}, false
	}
	r := attr.Expr.Range()
	dc.d.ranges[key] = r
	v, ok := dc.value(attr.Expr)
	if !ok {
		return nil, r, false
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		dc.add(typeDiag(r, key, "a whole number"+exampleFor(key), v))
		return nil, r, false
	}
	n, acc := v.AsBigFloat().Int(nil)
	if acc != big.Exact {
		dc.add(errDiag("Incorrect attribute value type", fmt.Sprintf("%s must be a whole number; this is %s.", key, v.AsBigFloat().Text('g', -1)), r))
		return nil, r, false
	}
	return n, r, true
}

// checkUpdateSource returns "" or what is wrong with updates.source.
func checkUpdateSource(v string) string {
	if strings.TrimSpace(v) == "" {
		return "the source cannot be empty: write the https:// URL of the channel directory."
	}
	if !strings.Contains(v, "://") && !filepath.IsAbs(v) {
		return "installed copies read the source wherever they are, so it cannot be relative to the distribution directory: write an https:// URL, a file:// URL or an absolute path of the channel directory."
	}
	if _, err := channel.OpenSource(v, nil); err != nil {
		msg := err.Error()
		if e, ok := channel.AsError(err); ok {
			msg = e.Msg
		}
		// "update source <s>: why": the diagnostic names the source itself.
		if rest, ok := strings.CutPrefix(msg, "update source "); ok {
			if _, why, ok := strings.Cut(rest, ": "); ok {
				msg = why
			}
		}
		return sentence(msg)
	}
	return ""
}
