package channel

import (
	"testing"
	"time"
)

// --expires-days is 1 to MaxExpiresDays; a count whose hours overflow a
// time.Duration (106752 days goes negative, 213504 wraps round to a few
// hours) never reaches Sign, and Sign itself refuses more than the bound.
func TestExpiresInDays(t *testing.T) {
	if d, err := ExpiresInDays(MaxExpiresDays); err != nil || d != MaxExpiresDays*24*time.Hour {
		t.Fatalf("%d days: %v %v", MaxExpiresDays, d, err)
	}
	for _, days := range []int{0, -1, MaxExpiresDays + 1, 106752, 213504} {
		_, err := ExpiresInDays(days)
		wantErr(t, err, CodeConfigInvalid, "", "--expires-days", "out of range", "1 to 3650")
	}
	_, err := Sign(t.TempDir(), nil, SignOptions{Channel: "stable", Keys: testKeys(t, 1), ExpiresIn: (MaxExpiresDays + 1) * 24 * time.Hour, Now: now})
	wantErr(t, err, CodeConfigInvalid, "", "at most 3650 days")
}
