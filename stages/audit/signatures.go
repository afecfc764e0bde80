package audit

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"piship.dev/piship/cache/canon"
	par "piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/release/vulnreport"
	"piship.dev/piship/stages/stage/errcode"
)

// SignatureSchema identifies a SignatureReport.
const SignatureSchema = "piship-signatures/v1"

// KeysPath is the registry's signing keys endpoint, relative to the
// registry URL.
const KeysPath = "-/npm/v1/keys"

// packumentWorkers is how many packuments are fetched at once.
const packumentWorkers = 8

// maxPackument bounds a packument (some full ones are tens of MiB).
const maxPackument = 128 << 20

// SignatureReport is the check of the npm registry's signatures over the
// registry packages of a lock.
type SignatureReport struct {
	Schema   string `json:"schema"`
	Registry string `json:"registry"`
	// Verdict is failed when a signature does not verify, was made with a
	// key expired at publication, or signs another integrity than the
	// lock's; else unavailable when signatures cannot be checked (no keys,
	// packuments without signatures, an unreachable registry); else
	// passed.
	Verdict string `json:"verdict"`
	// Verified counts the registry package versions whose signatures
	// verified.
	Verified int `json:"verified"`
	// Missing and Invalid list name@version, sorted.
	Missing []string `json:"missing"`
	Invalid []string `json:"invalid"`
	// External lists name@version of packages resolved from a URL outside
	// the registry: no registry signs them (the lock's integrity pins
	// them).
	External []string `json:"external"`
	// Reason says why the verdict is not passed, or notes a pass ("no
	// registry packages").
	Reason string `json:"reason"`
	// Local counts file: and link packages, Bundled the bundled
	// dependencies (covered by their parent's signature): both exempt.
	Local   int `json:"local"`
	Bundled int `json:"bundled"`
}

// Failure returns nil when the check lets the release go on (passed, or
// unavailable when allowUnavailable), else an error saying why.
func (r *SignatureReport) Failure(allowUnavailable bool) error {
	switch {
	case r.Verdict == Passed, r.Verdict == Unavailable && allowUnavailable:
		return nil
	case r.Verdict == Unavailable:
		return errcode.Newf(errcode.PolicyDenied, "registry signatures cannot be checked: %s; a release needs them (or signatures.allow_unavailable = true in %s)", r.Reason, distribution.FileName)
	}
	return errcode.Newf(errcode.IntegrityFailed, "registry signatures: %s", r.Reason)
}

// Marshal returns the canonical JSON of the report: keys sorted, two-space
// indent, empty lists as [], a trailing newline.
func (r *SignatureReport) Marshal() []byte { return vulnreport.CanonicalJSON(r) }

// signatureJSON is SignatureReport without its MarshalJSON.
type signatureJSON SignatureReport

// MarshalJSON writes the report with sorted keys and empty lists as [].
func (r SignatureReport) MarshalJSON() ([]byte, error) {
	c := r
	for _, s := range []*[]string{&c.Missing, &c.Invalid, &c.External} {
		if *s == nil {
			*s = []string{}
		}
	}
	return vulnreport.SortedJSON((*signatureJSON)(&c))
}

// registryKey is a key of the keys endpoint.
type registryKey struct {
	id      string
	pub     *ecdsa.PublicKey
	expires *time.Time
	// unsupported says why the key cannot verify ("" when it can).
	unsupported string
}

// VerifySignatures checks the npm registry's ECDSA P-256 signatures over
// "<name>@<version>:<integrity>" for every registry package, as npm audit
// signatures does: the keys come from <registry>/-/npm/v1/keys, the
// signatures from each package's packument (fetched 8 at a time, bounded
// by o.Timeout, 429 and 5xx retried briefly), the integrity must be the
// lock's, and the signing key must not have expired when the version was
// published (time[version] of the full packument, fetched only for a key
// expired by now; o.Now when the registry does not say). Local and bundled
// packages are exempt; packages from URLs outside the registry are listed
// as External.
func VerifySignatures(ctx context.Context, pkgs []Package, o Options) *SignatureReport {
	o = o.withDefaults()
	r := &SignatureReport{Schema: SignatureSchema, Registry: o.Registry}
	type want struct{ name, version, integrity string }
	var wants []want
	seen := map[want]bool{}
	for _, p := range pkgs {
		switch {
		case p.Local:
			r.Local++
			continue
		case p.Bundled:
			r.Bundled++
			continue
		case !fromRegistry(p.Resolved, o.Registry):
			if id := p.ID(); !slices.Contains(r.External, id) {
				r.External = append(r.External, id)
			}
			continue
		}
		w := want{p.Name, p.Version, p.Integrity}
		if !seen[w] {
			seen[w] = true
			wants = append(wants, w)
		}
	}
	slices.Sort(r.External)
	if len(wants) == 0 {
		r.Verdict, r.Reason = Passed, "no registry packages"
		return r
	}

	keys, why := o.fetchKeys(ctx)
	if why != "" {
		r.Verdict, r.Reason = Unavailable, why
		for _, w := range wants {
			r.Missing = append(r.Missing, w.name+"@"+w.version)
		}
		slices.Sort(r.Missing)
		r.Missing = slices.Compact(r.Missing)
		return r
	}

	// One packument per name, fetched by a few workers.
	byName := map[string][]want{}
	var names []string
	for _, w := range wants {
		if _, ok := byName[w.name]; !ok {
			names = append(names, w.name)
		}
		byName[w.name] = append(byName[w.name], w)
	}
	slices.Sort(names)
	type result struct {
		id, problem string
		missing     bool
	}
	results := make([][]result, len(names))
	// Every name is checked, even once ctx ends: a fetch that fails says so.
	_ = par.ForEach(context.Background(), len(names), packumentWorkers, func(i int) error {
		name := names[i]
		pk, err := o.fetchPackument(ctx, name, false)
		var full *packument
		for _, w := range byName[name] {
			id := w.name + "@" + w.version
			if err != nil {
				results[i] = append(results[i], result{id, err.Error(), true})
				continue
			}
			verdict, problem := checkVersion(ctx, o, keys, pk, &full, w.name, w.version, w.integrity)
			results[i] = append(results[i], result{id, problem, verdict == Unavailable})
			if verdict == Passed {
				results[i][len(results[i])-1].problem = ""
			}
		}
		return nil
	})

	var invalid, missing []string
	verified := 0
	for _, rs := range results {
		for _, x := range rs {
			switch {
			case x.problem == "":
				verified++
			case x.missing:
				r.Missing = append(r.Missing, x.id)
				missing = append(missing, x.id+": "+x.problem)
			default:
				r.Invalid = append(r.Invalid, x.id)
				invalid = append(invalid, x.id+": "+x.problem)
			}
		}
	}
	r.Verified = verified
	slices.Sort(r.Missing)
	r.Missing = slices.Compact(r.Missing)
	slices.Sort(r.Invalid)
	r.Invalid = slices.Compact(r.Invalid)
	slices.Sort(invalid)
	slices.Sort(missing)
	var reasons []string
	if len(invalid) > 0 {
		reasons = append(reasons, summarize(len(invalid), "registry package fails verification", "registry packages fail verification", invalid))
	}
	if len(missing) > 0 {
		s := summarize(len(missing), "registry package cannot be checked", "registry packages cannot be checked", missing)
		if len(missing) == len(wants) && allSame(missing, "carries no registry signature") {
			s = fmt.Sprintf("the registry at %s serves packuments without signatures (%s, e.g. %s)", o.Registry, canon.Count(len(missing), "package"), missing[0][:strings.Index(missing[0], ": ")])
		}
		reasons = append(reasons, s)
	}
	r.Reason = strings.Join(reasons, "; ")
	switch {
	case len(invalid) > 0:
		r.Verdict = Failed
	case len(missing) > 0:
		r.Verdict = Unavailable
	default:
		r.Verdict = Passed
		r.Reason = fmt.Sprintf("%d registry package versions verified", verified)
	}
	return r
}

func allSame(lines []string, suffix string) bool {
	for _, l := range lines {
		if !strings.HasSuffix(l, suffix) {
			return false
		}
	}
	return true
}

// summarize writes "<n> <what>: a; b; c and 2 more".
func summarize(n int, one, many string, items []string) string {
	what := many
	if n == 1 {
		what = one
	}
	const show = 5
	s := fmt.Sprintf("%d %s: %s", n, what, strings.Join(items[:min(show, len(items))], "; "))
	if len(items) > show {
		s += fmt.Sprintf("; and %d more", len(items)-show)
	}
	return s
}

// fromRegistry reports whether a package resolved at resolved comes from
// the registry: no resolved URL (npm fetches it from its registry), a URL
// under the registry, or under npm's default registry (npm maps those to
// the configured one).
func fromRegistry(resolved, registry string) bool {
	return resolved == "" || strings.HasPrefix(resolved, registry) || strings.HasPrefix(resolved, npm.DefaultRegistry)
}

// fetchKeys reads the registry's keys, or says why they are unavailable.
func (o Options) fetchKeys(ctx context.Context) (map[string]registryKey, string) {
	u := o.Registry + KeysPath
	data, err := o.fetch(ctx, request{method: "GET", url: u, limit: 1 << 20, header: map[string]string{"Accept": "application/json"}})
	if err != nil {
		if he, ok := err.(*httpError); ok && he.Status == 404 {
			return nil, fmt.Sprintf("the registry at %s serves no signing keys (404 from %s)", o.Registry, u)
		}
		return nil, fmt.Sprintf("the registry at %s: the signing keys cannot be fetched: %s (GET %s)", o.Registry, err, u)
	}
	var doc struct {
		Keys []struct {
			Expires *string `json:"expires"`
			KeyID   string  `json:"keyid"`
			KeyType string  `json:"keytype"`
			Scheme  string  `json:"scheme"`
			Key     string  `json:"key"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Keys == nil {
		if err == nil {
			err = fmt.Errorf(`no "keys"`)
		}
		return nil, fmt.Sprintf("the registry at %s serves malformed signing keys: %v", o.Registry, err)
	}
	keys := map[string]registryKey{}
	for _, k := range doc.Keys {
		if k.KeyID == "" {
			return nil, fmt.Sprintf("the registry at %s serves malformed signing keys: a key without keyid", o.Registry)
		}
		rk := registryKey{id: k.KeyID}
		if k.Expires != nil {
			t, err := time.Parse(time.RFC3339, *k.Expires)
			if err != nil {
				return nil, fmt.Sprintf("the registry at %s serves malformed signing keys: key %s expires %q: %v", o.Registry, k.KeyID, *k.Expires, err)
			}
			rk.expires = &t
		}
		if k.KeyType != "ecdsa-sha2-nistp256" || (k.Scheme != "" && k.Scheme != "ecdsa-sha2-nistp256") {
			rk.unsupported = fmt.Sprintf("key type %q, scheme %q", k.KeyType, k.Scheme)
		} else if der, err := base64.StdEncoding.DecodeString(k.Key); err != nil {
			rk.unsupported = "key is not base64: " + err.Error()
		} else if pub, err := x509.ParsePKIXPublicKey(der); err != nil {
			rk.unsupported = "key is not a public key: " + err.Error()
		} else if ec, ok := pub.(*ecdsa.PublicKey); !ok || ec.Curve != elliptic.P256() {
			rk.unsupported = "key is not ECDSA P-256"
		} else {
			rk.pub = ec
		}
		keys[k.KeyID] = rk
	}
	if len(keys) == 0 {
		return nil, fmt.Sprintf("the registry at %s serves an empty set of signing keys", o.Registry)
	}
	return keys, ""
}

// packument is what the check reads of one.
type packument struct {
	Versions map[string]struct {
		Dist struct {
			Integrity  string `json:"integrity"`
			Signatures []struct {
				KeyID string `json:"keyid"`
				Sig   string `json:"sig"`
			} `json:"signatures"`
		} `json:"dist"`
	} `json:"versions"`
	Time map[string]string `json:"time"`
}

// fetchPackument fetches a package's packument: abbreviated (which carries
// dist.signatures) or full (which also carries time).
func (o Options) fetchPackument(ctx context.Context, name string, full bool) (*packument, error) {
	// npm's escaping: @scope%2fname; names are otherwise URL-safe.
	u := o.Registry + strings.ReplaceAll(url.PathEscape(name), "%2F", "%2f")
	accept := "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8"
	if full {
		accept = "application/json"
	}
	data, err := o.fetch(ctx, request{method: "GET", url: u, limit: maxPackument, header: map[string]string{"Accept": accept}})
	if err != nil {
		return nil, fmt.Errorf("the packument cannot be fetched: %v (GET %s)", err, u)
	}
	var pk packument
	if err := json.Unmarshal(data, &pk); err != nil {
		return nil, fmt.Errorf("the packument is malformed: %v (GET %s)", err, u)
	}
	return &pk, nil
}

// checkVersion verifies one version's signatures: Passed, Failed or
// Unavailable, and the problem.
func checkVersion(ctx context.Context, o Options, keys map[string]registryKey, pk *packument, full **packument, name, ver, integrity string) (string, string) {
	v, ok := pk.Versions[ver]
	switch {
	case !ok:
		return Unavailable, "the registry does not list this version"
	case integrity == "":
		return Unavailable, "the lock records no integrity"
	case v.Dist.Integrity != integrity:
		return Failed, fmt.Sprintf("the registry's integrity %s is not the lock's %s", v.Dist.Integrity, integrity)
	case len(v.Dist.Signatures) == 0:
		return Unavailable, "carries no registry signature"
	}
	msg := []byte(name + "@" + ver + ":" + integrity)
	digest := sha256.Sum256(msg)
	for _, s := range v.Dist.Signatures {
		k, known := keys[s.KeyID]
		switch {
		case !known:
			return Unavailable, fmt.Sprintf("signed with key %s, which the registry does not list", s.KeyID)
		case k.unsupported != "":
			return Unavailable, fmt.Sprintf("signed with key %s, which cannot verify: %s", s.KeyID, k.unsupported)
		}
		if k.expires != nil && !o.Now.Before(*k.expires) {
			// Expired by now: it counts if it was current at publication.
			published, err := publishTime(ctx, o, pk, full, name, ver)
			expired := k.expires.UTC().Format(time.RFC3339)
			switch {
			case err != nil:
				return Failed, fmt.Sprintf("signed with key %s, which expired on %s, and the registry gives no publication time to show it was current then (%v)", s.KeyID, expired, err)
			case !published.Before(*k.expires):
				return Failed, fmt.Sprintf("signed with key %s, which expired on %s, before the version was published (%s)", s.KeyID, expired, published.UTC().Format(time.RFC3339))
			}
		}
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil || !ecdsa.VerifyASN1(k.pub, digest[:], sig) {
			return Failed, fmt.Sprintf("the signature by key %s does not verify", s.KeyID)
		}
	}
	return Passed, ""
}

// publishTime is time[version], from the packument at hand or the full one
// (fetched once per name).
func publishTime(ctx context.Context, o Options, pk *packument, full **packument, name, ver string) (time.Time, error) {
	src := pk
	if pk.Time == nil {
		if *full == nil {
			f, err := o.fetchPackument(ctx, name, true)
			if err != nil {
				return time.Time{}, err
			}
			*full = f
		}
		src = *full
	}
	s, ok := src.Time[ver]
	if !ok {
		return time.Time{}, fmt.Errorf("no publication time")
	}
	return time.Parse(time.RFC3339, s)
}
