package home

import (
	"testing"

	"piship.dev/piship/stages/stage/errcode"
)

// OpenStore gives contentstore.Open's plain errors their codes: a refused
// PISHIP_STORE value is CONFIG_INVALID (exit 2), a cache home that cannot
// be found is CONFIG_UNAVAILABLE, with the words cache wrote.
func TestOpenStoreCodes(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		env  map[string]string
		code string
		msg  string
	}{
		{map[string]string{"PISHIP_STORE": "copy", "PISHIP_CACHE_HOME": t.TempDir()}, errcode.ConfigInvalid,
			"CONFIG_INVALID: PISHIP_STORE=copy is not offered: a copy or clone of an object costs what writing the file does; use hardlink or off"},
		{map[string]string{"PISHIP_STORE": "sometimes", "PISHIP_CACHE_HOME": t.TempDir()}, errcode.ConfigInvalid,
			`CONFIG_INVALID: PISHIP_STORE="sometimes": want off or hardlink`},
		{map[string]string{"PISHIP_STORE": "hardlink"}, errcode.ConfigUnavailable,
			"CONFIG_UNAVAILABLE: cache: cannot locate the cache directory: set PISHIP_CACHE_HOME (or XDG_CACHE_HOME or HOME) (or set PISHIP_STORE=off)"},
	} {
		_, err := OpenStore(env(c.env))
		if errcode.Of(err) != c.code || err.Error() != c.msg {
			t.Errorf("%v: %v (code %q), want %q", c.env, err, errcode.Of(err), c.msg)
		}
	}
}
