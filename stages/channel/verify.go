package channel

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Trust is what an installation trusts a channel with: the distribution's
// updates block as its lock records it.
type Trust struct {
	// Distribution is the distribution id the channel must name.
	Distribution string
	// Keys are the trusted public keys by key id.
	Keys map[string]ed25519.PublicKey
	// Threshold is how many distinct trusted keys must sign (at least 1).
	Threshold int
}

// Verified is a channel document that passed Verify.
type Verified struct {
	Channel *Channel
	// Signers are the ids of the trusted keys whose signature verified,
	// sorted.
	Signers []string
}

// Verify checks a channel document and its signature file against trust,
// in this order, and refuses with UPDATE_FAILED naming the reason:
//
//   - the trust itself: at least one key, 1 <= Threshold <= len(Keys)
//     (ReasonTrust);
//   - the sizes (MaxDocumentBytes) and the signature file's form
//     (ReasonMalformed);
//   - at least Threshold distinct trusted keys with a valid Ed25519
//     signature over the exact bytes of doc (ReasonSignatures). A
//     signature by a key id trust does not hold, with another algorithm,
//     or a second one by the same key counts for nothing; two ids that
//     name the same public key count once. Signatures are checked before
//     the document is parsed, so unsigned input is never interpreted;
//   - the document itself (Parse; ReasonMalformed);
//   - the distribution (ReasonDistribution) and the channel name
//     (ReasonChannel);
//   - the expiry: Expires before now is refused (ReasonExpired). The
//     caller takes now once per attempt;
//   - the sequence: below floor, the highest sequence this installation
//     accepted for the channel, is a replay (ReasonReplay). Equal is
//     accepted: the same document fetched again.
//
// A signature file is {"signatures": [{keyId, algorithm, signature}...]};
// a single {keyId, algorithm, signature} object, as the TypeScript PiShip
// writes, is read as a list of one.
func Verify(doc, sig []byte, t Trust, channelName string, floor int64, now time.Time) (*Verified, error) {
	name := DocName(channelName)
	if len(t.Keys) == 0 {
		return nil, updateErr(ReasonTrust, "%s: the distribution trusts no channel keys: its updates block lists none", name)
	}
	if t.Threshold < 1 || t.Threshold > len(t.Keys) {
		return nil, updateErr(ReasonTrust, "%s: the trust's threshold %d is not between 1 and its %d keys", name, t.Threshold, len(t.Keys))
	}
	if len(doc) > MaxDocumentBytes || len(sig) > MaxDocumentBytes {
		return nil, updateErr(ReasonTooLarge, "%s or its signature file is larger than %d KiB", name, MaxDocumentBytes>>10)
	}
	sigs, err := parseSignatures(sig)
	if err != nil {
		return nil, updateErr(ReasonMalformed, "%s: %v", SigName(channelName), err)
	}

	var signers, unknown, invalid []string
	seenKey := map[string]bool{} // by public key bytes
	seenID := map[string]bool{}
	for _, s := range sigs {
		pub, trusted := t.Keys[s.KeyID]
		switch {
		case !trusted:
			unknown = appendOnce(unknown, s.KeyID)
			continue
		case seenID[s.KeyID]:
			continue // a second signature by one key counts for nothing
		}
		raw, err := base64.StdEncoding.DecodeString(s.Signature)
		if s.Algorithm != Algorithm || err != nil || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, doc, raw) {
			invalid = appendOnce(invalid, s.KeyID)
			continue
		}
		seenID[s.KeyID] = true
		if seenKey[string(pub)] {
			continue // two ids of one key are one signer
		}
		seenKey[string(pub)] = true
		signers = append(signers, s.KeyID)
	}
	slices.Sort(signers)
	if len(signers) < t.Threshold {
		var why []string
		if len(signers) > 0 {
			why = append(why, "verified: "+strings.Join(signers, ", "))
		}
		if bad := removeAll(invalid, seenIDs(seenID)); len(bad) > 0 {
			why = append(why, "invalid signatures by: "+strings.Join(bad, ", "))
		}
		if len(unknown) > 0 {
			why = append(why, "keys not trusted: "+strings.Join(unknown, ", "))
		}
		if len(sigs) == 0 {
			why = append(why, "the signature file holds no signatures")
		}
		detail := ""
		if len(why) > 0 {
			detail = " (" + strings.Join(why, "; ") + ")"
		}
		return nil, updateErr(ReasonSignatures, "%s: %d of the %d required trusted keys signed it%s: it was altered, or is not signed by enough of the keys this installation trusts",
			name, len(signers), t.Threshold, detail)
	}

	c, err := Parse(doc)
	if err != nil {
		e, _ := AsError(err)
		e.Msg = name + ": " + e.Msg
		return nil, e
	}
	switch {
	case c.Distribution != t.Distribution:
		return nil, updateErr(ReasonDistribution, "%s is the channel of distribution %q, not of %q: the source serves another distribution", name, c.Distribution, t.Distribution)
	case c.Channel != channelName:
		return nil, updateErr(ReasonChannel, "%s names channel %q, not %q: a document served under another channel's name is refused", name, c.Channel, channelName)
	case c.Expires.Before(now):
		return nil, updateErr(ReasonExpired, "%s expired at %s (now %s): the publisher must sign the channel again (piship sign-channel)",
			name, c.Expires.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case c.Sequence < floor:
		return nil, updateErr(ReasonReplay, "%s has sequence %d, below %d, the highest this installation accepted: an old channel replayed (or a rolled-back server) is refused",
			name, c.Sequence, floor)
	}
	return &Verified{Channel: c, Signers: signers}, nil
}

func parseSignatures(sig []byte) ([]Signature, error) {
	trimmed := bytes.TrimSpace(sig)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("the signature file is empty")
	}
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return err
		}
		if dec.More() {
			return fmt.Errorf("data after the signatures")
		}
		return nil
	}
	var f SignatureFile
	err := strict(&f)
	if err == nil && f.Signatures != nil {
		return f.Signatures, nil
	}
	var one Signature
	if strict(&one) == nil && one.KeyID != "" {
		return []Signature{one}, nil
	}
	if err == nil {
		err = fmt.Errorf("no signatures list")
	}
	return nil, fmt.Errorf("not a signature file (%v)", err)
}

func seenIDs(m map[string]bool) []string {
	var out []string
	for id := range m {
		out = append(out, id)
	}
	return out
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func removeAll(s, drop []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(drop, v) {
			out = append(out, v)
		}
	}
	return out
}
