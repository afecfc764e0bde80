package canon

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Count(0, "file"), "0 files"},
		{Count(1, "file"), "1 file"},
		{Count(2, "file"), "2 files"},
		{Count(1, "directory", "directories"), "1 directory"},
		{Count(3, "directory", "directories"), "3 directories"},
		{Noun(1, "package"), "package"},
		{Verb(1, "has", "have"), "has"},
		{Verb(2, "has", "have"), "have"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestOf(t *testing.T) {
	if got := Of(1, 1, "file"); got != "1 of 1 file" {
		t.Errorf("got %q", got)
	}
	if got := Of(int64(1), 2, "file"); got != "1 of 2 files" {
		t.Errorf("got %q", got)
	}
}
