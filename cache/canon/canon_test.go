package canon

import "testing"

func TestJSON(t *testing.T) {
	got, err := JSON(map[string]any{"b": "<&>", "a": []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": [\n    1\n  ],\n  \"b\": \"<&>\"\n}\n"; string(got) != want {
		t.Fatalf("JSON = %q, want %q", got, want)
	}
	if _, err := JSON(func() {}); err == nil {
		t.Fatal("a func encoded")
	}
}

func TestSHA256Hex(t *testing.T) {
	if got := SHA256Hex([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatal(got)
	}
	if !IsSHA256Hex(SHA256Hex(nil)) {
		t.Fatal("IsSHA256Hex refuses what SHA256Hex writes")
	}
	for _, bad := range []string{"", "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", SHA256Hex(nil)[1:], SHA256Hex(nil) + "0", "g" + SHA256Hex(nil)[1:], "sha256:" + SHA256Hex(nil)} {
		if IsSHA256Hex(bad) {
			t.Errorf("IsSHA256Hex(%q) = true", bad)
		}
	}
}
