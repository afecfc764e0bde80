package audit

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/audit/audittest"
)

// signedRegistry serves registryPkgs' registry packages, signed.
func signedRegistry(t *testing.T) (*audittest.Server, []Package) {
	t.Helper()
	s := audittest.NewServer(t)
	pkgs := registryPkgs()
	for _, p := range pkgs {
		if !p.Local {
			s.AddPackage(audittest.Package{Name: p.Name, Version: p.Version, Integrity: p.Integrity})
		}
	}
	return s, pkgs
}

func TestSignaturesPassed(t *testing.T) {
	s, pkgs := signedRegistry(t)
	pkgs = append(pkgs, Package{Name: "inner", Version: "1.0.0", Path: "node_modules/minimist/node_modules/inner", Bundled: true})
	r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Passed || r.Verified != 4 || r.Local != 2 || r.Bundled != 1 || len(r.Missing)+len(r.Invalid) != 0 || r.Failure(false) != nil {
		t.Fatalf("%s", r.Marshal())
	}
	if r.Reason != "4 registry package versions verified" || r.Schema != SignatureSchema || r.Registry != s.URL {
		t.Errorf("%+v", r)
	}
	// One packument per name; the scoped one escaped as npm does.
	if n := s.Requests(audittest.Packuments); n != 3 {
		t.Errorf("%d packument requests, want 3", n)
	}
	if n := s.FullPackumentRequests(); n != 0 {
		t.Errorf("%d full packuments fetched for keys that never expire", n)
	}
}

func TestSignaturesLocalOnly(t *testing.T) {
	s := audittest.NewServer(t)
	s.DisableKeys()
	r := VerifySignatures(context.Background(), helloPackages(t), Options{Registry: s.URL})
	if r.Verdict != Passed || r.Reason != "no registry packages" || r.Local != 4 || s.Requests(audittest.Keys) != 0 {
		t.Errorf("%s", r.Marshal())
	}
}

func TestSignaturesInvalid(t *testing.T) {
	s, pkgs := signedRegistry(t)
	s.CorruptSignature("lodash@4.17.21")
	r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Failed || !reflect.DeepEqual(r.Invalid, []string{"lodash@4.17.21"}) || r.Verified != 3 {
		t.Fatalf("%s", r.Marshal())
	}
	want := "1 registry package fails verification: lodash@4.17.21: the signature by key " + s.KeyID + " does not verify"
	if r.Reason != want {
		t.Errorf("reason %q\nwant %q", r.Reason, want)
	}
	if err := r.Failure(true); err == nil || err.Error() != "INTEGRITY_FAILED: registry signatures: "+want {
		t.Errorf("Failure(true) = %v: allow_unavailable never excuses an invalid signature", err)
	}
}

func TestSignaturesIntegrityMismatch(t *testing.T) {
	s, pkgs := signedRegistry(t)
	for i := range pkgs {
		if pkgs[i].Name == "minimist" {
			pkgs[i].Integrity = "sha512-b3RoZXI="
		}
	}
	r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Failed || !reflect.DeepEqual(r.Invalid, []string{"minimist@1.2.8"}) ||
		!strings.Contains(r.Reason, "minimist@1.2.8: the registry's integrity sha512-bWluaW1pc3Q= is not the lock's sha512-b3RoZXI=") {
		t.Errorf("%s", r.Marshal())
	}
}

func TestSignaturesMissing(t *testing.T) {
	s, pkgs := signedRegistry(t)
	s.OmitSignatures("*")
	r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Unavailable || len(r.Missing) != 4 || r.Verified != 0 {
		t.Fatalf("%s", r.Marshal())
	}
	if want := "the registry at " + s.URL + " serves packuments without signatures (4 packages, e.g. @scope/tool@2.0.0-rc.1)"; r.Reason != want {
		t.Errorf("reason %q\nwant %q", r.Reason, want)
	}
	if r.Failure(true) != nil {
		t.Error("allow_unavailable does not excuse missing signatures")
	}
	if err := r.Failure(false); err == nil || !strings.HasPrefix(err.Error(), "POLICY_DENIED: registry signatures cannot be checked: the registry at") ||
		!strings.Contains(err.Error(), "signatures.allow_unavailable") {
		t.Errorf("Failure(false) = %v", err)
	}

	// One unsigned version among signed ones.
	s, pkgs = signedRegistry(t)
	s.OmitSignatures("minimist@1.2.8")
	r = VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Unavailable || !reflect.DeepEqual(r.Missing, []string{"minimist@1.2.8"}) || r.Verified != 3 ||
		r.Reason != "1 registry package cannot be checked: minimist@1.2.8: carries no registry signature" {
		t.Errorf("%s", r.Marshal())
	}

	// A package the registry does not know.
	s, pkgs = signedRegistry(t)
	pkgs = append(pkgs, Package{Name: "ghost", Version: "1.0.0", Path: "node_modules/ghost", Integrity: "sha512-Z2hvc3Q="})
	r = VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Unavailable || !reflect.DeepEqual(r.Missing, []string{"ghost@1.0.0"}) || !strings.Contains(r.Reason, "ghost@1.0.0: the packument cannot be fetched: answered 404 Not Found") {
		t.Errorf("%s", r.Marshal())
	}
}

func TestSignaturesNoKeys(t *testing.T) {
	s, pkgs := signedRegistry(t)
	s.DisableKeys()
	r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	want := "the registry at " + s.URL + " serves no signing keys (404 from " + s.URL + "-/npm/v1/keys)"
	if r.Verdict != Unavailable || r.Reason != want || len(r.Missing) != 4 || s.Requests(audittest.Packuments) != 0 {
		t.Errorf("%s\nwant reason %q", r.Marshal(), want)
	}
	for _, f := range []audittest.Fault{audittest.Malformed, audittest.ServerError, audittest.Hang} {
		s.SetFault(audittest.Keys, f)
		r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now, Timeout: 200 * time.Millisecond})
		if r.Verdict != Unavailable || !strings.Contains(r.Reason, "the registry at "+s.URL) {
			t.Errorf("keys fault %d: %s", f, r.Marshal())
		}
		t.Log(r.Reason)
	}
}

func TestSignaturesExpiredKey(t *testing.T) {
	s, pkgs := signedRegistry(t)
	expired := time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC) // packages are published 2024-01-01
	s.SetKeyExpiry(&expired)
	r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Failed || len(r.Invalid) != 4 ||
		!strings.Contains(r.Reason, "which expired on 2023-06-01T00:00:00Z, before the version was published (2024-01-01T00:00:00Z)") {
		t.Fatalf("%s", r.Marshal())
	}
	// Publication times come from the full packument, once per name.
	if n := s.FullPackumentRequests(); n != 3 {
		t.Errorf("%d full packument requests, want 3", n)
	}

	// A key that has expired since the versions were published still
	// vouches for them, as npm checks.
	s, pkgs = signedRegistry(t)
	later := time.Date(2025, 1, 29, 0, 0, 0, 0, time.UTC)
	s.SetKeyExpiry(&later)
	r = VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Passed || r.Verified != 4 {
		t.Errorf("key expired after publication: %s", r.Marshal())
	}
	// And a key that expires in the future needs no publication time.
	s, pkgs = signedRegistry(t)
	future := now.Add(24 * time.Hour)
	s.SetKeyExpiry(&future)
	r = VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Passed || s.FullPackumentRequests() != 0 {
		t.Errorf("current key: %s (%d full)", r.Marshal(), s.FullPackumentRequests())
	}
}

func TestSignaturesPackumentFaults(t *testing.T) {
	for _, c := range []struct {
		fault  audittest.Fault
		reason string
	}{
		{audittest.Hang, "timed out after 200ms"},
		{audittest.Malformed, "the packument is malformed"},
		{audittest.ServerError, "answered 500 Internal Server Error"},
		{audittest.TooManyRequests, "answered 429 Too Many Requests"},
	} {
		t.Run(c.fault.String(), func(t *testing.T) {
			t.Parallel()
			s, pkgs := signedRegistry(t)
			s.SetFault(audittest.Packuments, c.fault)
			start := time.Now()
			r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now, Timeout: 200 * time.Millisecond})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			if r.Verdict != Unavailable || len(r.Missing) != 4 || !strings.Contains(r.Reason, c.reason) {
				t.Errorf("%s\nwant a reason with %q", r.Marshal(), c.reason)
			}
		})
	}
	// A brief 503 is retried.
	s, pkgs := signedRegistry(t)
	s.FailNext(audittest.Packuments, audittest.Unavailable, 2)
	r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Passed {
		t.Errorf("after a brief 503: %s", r.Marshal())
	}
}

// Packages resolved outside the registry carry no registry signature; they
// are listed, not failed.
func TestSignaturesExternal(t *testing.T) {
	s, pkgs := signedRegistry(t)
	pkgs = append(pkgs, Package{Name: "cdn-pkg", Version: "1.0.0", Path: "node_modules/cdn-pkg", Integrity: "sha512-Y2Ru", Resolved: "https://cdn.example.com/cdn-pkg-1.0.0.tgz"},
		Package{Name: "minimist", Version: "1.2.8", Path: "node_modules/y/node_modules/minimist", Integrity: "sha512-bWluaW1pc3Q=", Resolved: "https://registry.npmjs.org/minimist/-/minimist-1.2.8.tgz"})
	r := VerifySignatures(context.Background(), pkgs, Options{Registry: s.URL, Now: now})
	if r.Verdict != Passed || !reflect.DeepEqual(r.External, []string{"cdn-pkg@1.0.0"}) || r.Verified != 4 {
		t.Errorf("%s", r.Marshal())
	}
}
