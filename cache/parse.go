package cache

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const sizeForms = `want a byte count such as 1024, 10k, 500MB or 2GiB ` +
	`(units B, k/kB, M/MB, G/GB, T/TB, P/PB in powers of 1000; ` +
	`Ki/KiB, Mi/MiB, Gi/GiB, Ti/TiB, Pi/PiB in powers of 1024; case-insensitive)`

var sizeUnits = map[string]int64{
	"":    1,
	"b":   1,
	"k":   1e3,
	"kb":  1e3,
	"m":   1e6,
	"mb":  1e6,
	"g":   1e9,
	"gb":  1e9,
	"t":   1e12,
	"tb":  1e12,
	"p":   1e15,
	"pb":  1e15,
	"ki":  1 << 10,
	"kib": 1 << 10,
	"mi":  1 << 20,
	"mib": 1 << 20,
	"gi":  1 << 30,
	"gib": 1 << 30,
	"ti":  1 << 40,
	"tib": 1 << 40,
	"pi":  1 << 50,
	"pib": 1 << 50,
}

// ParseSize parses a size such as "1024", "10k", "500MB", "1.5GiB" or
// "2 GiB" into bytes. Decimal units (k, kB, MB, ...) are powers of 1000 and
// binary units (KiB, MiB, ...) powers of 1024; units are case-insensitive.
// Fractional results are rounded down to whole bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("cache: invalid size %q: %s", s, sizeForms)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("cache: invalid size %q: too large", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "." {
		return 0, fmt.Errorf("cache: invalid size %q: %s", s, sizeForms)
	}
	v := math.Floor(f * float64(mult))
	if v >= math.MaxInt64 { // float64(MaxInt64) rounds up to 2^63
		return 0, fmt.Errorf("cache: invalid size %q: too large", s)
	}
	return int64(v), nil
}

const ageForms = `want a duration such as 30d, 12h, 1d12h or 90m ` +
	`(units d = 24h, h, m, s, ms, us, ns)`

// ParseAge parses a non-negative age: a Go duration (time.ParseDuration)
// optionally using a "d" suffix for 24-hour days, such as "30d", "12h",
// "1d12h" or "1.5d".
func ParseAge(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("cache: invalid age %q: %s", s, ageForms)
	}
	if t == "0" {
		return 0, nil
	}
	var total time.Duration
	for t != "" {
		// One component: a number followed by a unit.
		i := 0
		for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
			i++
		}
		j := i
		for j < len(t) && !(t[j] >= '0' && t[j] <= '9' || t[j] == '.') {
			j++
		}
		num, unit := t[:i], t[i:j]
		t = t[j:]
		if num == "" || unit == "" {
			return 0, fmt.Errorf("cache: invalid age %q: %s", s, ageForms)
		}
		var d time.Duration
		if unit == "d" {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil || num == "." {
				return 0, fmt.Errorf("cache: invalid age %q: %s", s, ageForms)
			}
			h := f * float64(24*time.Hour)
			if h >= math.MaxInt64 {
				return 0, fmt.Errorf("cache: invalid age %q: too large", s)
			}
			d = time.Duration(h)
		} else {
			var err error
			d, err = time.ParseDuration(num + unit)
			if err != nil {
				return 0, fmt.Errorf("cache: invalid age %q: %s", s, ageForms)
			}
		}
		if total > math.MaxInt64-d {
			return 0, fmt.Errorf("cache: invalid age %q: too large", s)
		}
		total += d
	}
	return total, nil
}
