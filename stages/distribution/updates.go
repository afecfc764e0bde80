package distribution

import (
	"fmt"
	"math/big"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/updatesource"
)

// The updates block: where installed copies of the distribution find new
// releases (a TUF repository, see stages/tuf) and which initial root they
// trust: root_sha256 pins the repository's metadata/1.root.json, the root
// `piship repo init` wrote and printed. Later roots are trusted because
// that root (and each one after it) signs them.

// DefaultChannel is updates.channel when it is not written.
const DefaultChannel = "stable"

// Updates is the updates block.
type Updates struct {
	// Channel is the default channel: the releases whose custom channel
	// field is Channel in the repository.
	Channel string
	// Source is the TUF repository (holding metadata/ and targets/) as
	// written: an absolute path, a file:// URL, an https:// URL, or an
	// http:// URL of a loopback host (updatesource.OpenSource reads it).
	Source string
	// RootSHA256 is the pinned initial root: "sha256:<64 lowercase hex>".
	RootSHA256 string
}

// removedUpdates are the attributes of the piship-channel/v1 updates
// block: still decoded so that writing them gets a diagnostic saying what
// replaced them rather than "unsupported argument".
var removedUpdates = []string{"keys", "threshold"}

func (dc *decoder) updates(blk *hcl.Block) {
	d := dc.d
	d.ranges["updates"] = blk.DefRange
	content := dc.content(blk.Body, updatesSchema, "the updates block", "updates.")
	attrs := content.Attributes
	u := &Updates{Channel: DefaultChannel}
	ok := true
	for _, n := range removedUpdates {
		if a, written := attrs[n]; written {
			dc.add(errDiag("Replaced by TUF",
				fmt.Sprintf("updates.%s was replaced by TUF: installed copies now trust a TUF repository's root instead of a list of channel keys. Run piship repo init DIR --key root=FILE --key targets=FILE --key snapshot=FILE --key timestamp=FILE, publish releases with piship repo add, and write updates.root_sha256 = \"sha256:<hex>\" (the digest repo init prints) instead of keys and threshold.", n),
				a.NameRange))
			ok = false
		}
	}
	if v, r, vok := dc.str(attrs, "updates.channel"); vok {
		if msg := updatesource.CheckName(v); msg != "" {
			detail := fmt.Sprintf("updates.channel %q: %s It is the channel field of the repository's releases.", v, msg)
			if low := strings.ToLower(v); low != v && updatesource.CheckName(low) == "" {
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
	if v, r, vok := dc.str(attrs, "updates.root_sha256"); vok {
		if pin, msg := CheckRootPin(v); msg != "" {
			dc.add(errDiag("Invalid root digest", fmt.Sprintf("updates.root_sha256 %q: %s", v, msg), r))
			ok = false
		} else {
			u.RootSHA256 = pin
		}
	} else {
		ok = false // hcl reported it missing, or its type
	}
	if ok {
		d.Updates = u
	}
}

// CheckRootPin normalises a root digest ("sha256:<hex>", the prefix
// optional, any case) to "sha256:<lowercase hex>", or says what is wrong.
func CheckRootPin(v string) (string, string) {
	h := strings.ToLower(strings.TrimSpace(v))
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", "a root digest is sha256:<64 hex digits>, the sha256 of the repository's metadata/1.root.json as piship repo init and piship repo status print it."
	}
	return "sha256:" + h, ""
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
	if _, err := updatesource.OpenSource(v, nil); err != nil {
		msg := err.Error()
		if e, ok := updatesource.AsError(err); ok {
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
