package consumer

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/stage"
)

// The report travels as a cty object; read back, it prints the JSON
// Doctor's own report prints, the lists it left nil included (empty
// arrays either way, never null).
func TestDoctorReportTravelsAsAValue(t *testing.T) {
	k := stage.Define(Doctor{})
	start, _ := time.Parse(time.RFC3339Nano, "2025-01-02T03:04:05.123456789+02:00")
	for name, rep := range map[string]home.DoctorReport{
		"empty lists": {ID: "hello", Active: "1.0.0", Verified: true, DiskBytes: 42},
		"everything": {
			ID: "hello", Active: "2.0.0", Previous: "1.0.0", Verified: true,
			Found:     []home.DoctorItem{{Code: home.DoctorShimModified, Path: "/b/hello", Detail: "changed"}},
			Repaired:  []home.DoctorItem{{Code: home.DoctorShimModified, Path: "/b/hello", Detail: "rewritten"}, {Code: home.DoctorLauncherOutdated, Path: "/l", Detail: "replaced"}},
			Reclaimed: []string{"a", "b"}, Remaining: []string{"c"}, DiskBytes: 7, TrustFile: "/t/hello.json",
			Leases: []home.DoctorLease{{Schema: "piship-lease/v1", App: "hello", Version: "2.0.0", PID: 12, Host: "h",
				Start: start.Format(time.RFC3339Nano), Instance: "i"}},
			Trust: home.TrustState{Channel: "stable", Source: "https://x",
				RootSHA256: "sha256:f"},
			Store: &home.StoreReport{Dir: "/s", Objects: 5, Removed: 1, Bytes: 9, Exhausted: true, Problem: "slow"},
			TUF: home.TUFTrust{Dir: "/i/trust/hello", Roles: []home.TUFRole{{Role: "root", Version: 1, Expires: "2027-01-01T00:00:00Z"},
				{Role: "timestamp", Version: 3, Expires: "2026-12-05T00:00:00Z"}}},
			Warnings: []home.DoctorItem{{Code: home.DoctorTrustExpiring, Path: "/i/trust/hello/timestamp.json", Detail: "expires"}},
		},
	} {
		want, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(want), "null") || !strings.Contains(string(want), `"schema": "piship-doctor/v1"`) {
			t.Fatalf("%s: %s", name, want)
		}
		enc, err := stage.EncodeOutputs(DoctorOutputs{Report: rep, Verified: rep.Verified, Problems: []string{}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		enc, err = stage.CheckOutputs(k, enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := stage.DecodeOutputs[DoctorOutputs](enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := got.Report.JSON()
		if err != nil || string(data) != string(want) {
			t.Errorf("%s: JSON after the trip\n%s(%v)\nwant\n%s", name, data, err, want)
		}
	}
}

// In a pipeline of one's own the doctor stage fails with INTEGRITY_FAILED
// when it found damage; with fail_on_damage = false it returns the report
// (what piship doctor runs, to print it before exiting 1).
func TestDoctorStageFailsOnDamage(t *testing.T) {
	root := t.TempDir()
	env := map[string]string{"PISHIP_INSTALL_HOME": filepath.Join(root, "i"), "PISHIP_BIN_HOME": filepath.Join(root, "b"),
		"PISHIP_STATE_HOME": filepath.Join(root, "s"), "PISHIP_STORE": "off"}
	inv := &stage.Invocation{Pipeline: "p", Name: "doctor", Log: io.Discard, Getenv: func(k string) string { return env[k] }}
	os.MkdirAll(filepath.Join(root, "i", "receipts"), 0o755)
	os.WriteFile(filepath.Join(root, "i", "receipts", "hello.json"), []byte("{not json"), 0o644)
	_, err := Doctor{}.Run(context.Background(), inv, DoctorConfig{ID: "hello"})
	if err == nil || !strings.HasPrefix(err.Error(), "INTEGRITY_FAILED: hello: doctor found 1 problem(s): RECEIPT_INVALID ") {
		t.Fatalf("default: %v", err)
	}
	no := false
	out, err := Doctor{}.Run(context.Background(), inv, DoctorConfig{ID: "hello", FailOnDamage: &no})
	if err != nil || len(out.Problems) != 1 || !strings.HasPrefix(out.Problems[0], "RECEIPT_INVALID ") || out.Report.Found[0].Code != home.DoctorReceiptInvalid || out.Verified {
		t.Fatalf("fail_on_damage = false: %+v, %v", out, err)
	}
}
