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
}
