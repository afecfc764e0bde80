package cache

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string // substring; "" means success
	}{
		{in: "0", want: 0},
		{in: "1024", want: 1024},
		{in: "1024B", want: 1024},
		{in: "1b", want: 1},
		{in: "10k", want: 10_000},
		{in: "10K", want: 10_000},
		{in: "10kB", want: 10_000},
		{in: "500MB", want: 500_000_000},
		{in: "500mb", want: 500_000_000},
		{in: "3G", want: 3_000_000_000},
		{in: "2TB", want: 2_000_000_000_000},
		{in: "1PB", want: 1_000_000_000_000_000},
		{in: "1KiB", want: 1024},
		{in: "1Ki", want: 1024},
		{in: "2GiB", want: 2 << 30},
		{in: "2gib", want: 2 << 30},
		{in: "4MiB", want: 4 << 20},
		{in: "1TiB", want: 1 << 40},
		{in: "1.5KiB", want: 1536},
		{in: "0.5GB", want: 500_000_000},
		{in: "1.0009k", want: 1000},
		{in: " 2 GiB ", want: 2 << 30},
		{in: "9223372036854775807", want: 1<<63 - 1},
		{in: "", wantErr: "want a byte count"},
		{in: "MB", wantErr: "want a byte count"},
		{in: "abc", wantErr: "want a byte count"},
		{in: "-1", wantErr: "want a byte count"},
		{in: "10XB", wantErr: "want a byte count"},
		{in: "1e3", wantErr: "want a byte count"},
		{in: ".", wantErr: "want a byte count"},
		{in: "1.2.3MB", wantErr: "want a byte count"},
		{in: "5 M B", wantErr: "want a byte count"},
		{in: "9223372036854775808", wantErr: "too large"},
		{in: "9223372036854775807k", wantErr: "too large"},
		{in: "9000000PiB", wantErr: "too large"},
		{in: "8192.5PiB", wantErr: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSize(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
	// The error names the accepted forms.
	_, err := ParseSize("lots")
	for _, form := range []string{"1024", "10k", "500MB", "2GiB"} {
		if err == nil || !strings.Contains(err.Error(), form) {
			t.Errorf("ParseSize error %v does not mention %s", err, form)
		}
	}
}

func TestParseAge(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "30d", want: 30 * day},
		{in: "1d", want: day},
		{in: "12h", want: 12 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "2d30m", want: 2*day + 30*time.Minute},
		{in: "90m", want: 90 * time.Minute},
		{in: "1h30m15s", want: time.Hour + 30*time.Minute + 15*time.Second},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "10us", want: 10 * time.Microsecond},
		{in: "10µs", want: 10 * time.Microsecond},
		{in: " 7d ", want: 7 * day},
		{in: "", wantErr: "want a duration"},
		{in: "d", wantErr: "want a duration"},
		{in: "30", wantErr: "want a duration"},
		{in: "-1d", wantErr: "want a duration"},
		{in: "-1h", wantErr: "want a duration"},
		{in: "1x", wantErr: "want a duration"},
		{in: "1w", wantErr: "want a duration"},
		{in: "1d 2h", wantErr: "want a duration"},
		{in: "1.2.3d", wantErr: "want a duration"},
		{in: "abc", wantErr: "want a duration"},
		{in: "10000000000d", wantErr: "too large"},
		{in: "106751d106751d", wantErr: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAge(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseAge(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseAge(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
	_, err := ParseAge("soon")
	for _, form := range []string{"30d", "12h", "1d12h"} {
		if err == nil || !strings.Contains(err.Error(), form) {
			t.Errorf("ParseAge error %v does not mention %s", err, form)
		}
	}
}
