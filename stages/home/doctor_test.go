package home

import (
	"testing"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/home/receipt"
)

// The report's leases write the JSON the lease records did, start time
// included, and read their start back.
func TestDoctorLeasesWriteTheLeaseJSON(t *testing.T) {
	start, _ := time.Parse(time.RFC3339Nano, "2025-01-02T03:04:05.5+02:00")
	ls := []receipt.Lease{{Schema: "piship-lease/v1", App: "hello", Version: "1.0.0", PID: 7, Host: "h", Start: start, Instance: "i",
		Path: "/p", Live: true, Reason: "alive"}}
	want, _ := canon.JSON(ls)
	dl := doctorLeases(ls)
	got, _ := canon.JSON(dl)
	if string(got) != string(want) || !dl[0].StartTime().Equal(start) {
		t.Errorf("leases %s, want %s (start %v)", got, want, dl[0].StartTime())
	}
	if doctorLeases(nil) != nil {
		t.Error("no leases are not nil")
	}
}
