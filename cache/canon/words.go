package canon

import "strconv"

// Count words n of a thing the one way piship prints counts: "1 file",
// "0 files", "2 files". The plural is one+"s" unless given ("1 directory",
// "3 directories"). Every printed count goes through it, so no message reads
// "1 files".
func Count(n int, one string, many ...string) string {
	return strconv.Itoa(n) + " " + Noun(n, one, many...)
}

// Noun is the form of a noun that goes with n: one when n is 1, else the
// plural (one+"s" unless given). "1 of 2 files" is
// strconv.Itoa(k)+" of "+Count(n, "file").
func Noun(n int, one string, many ...string) string {
	if n == 1 {
		return one
	}
	if len(many) > 0 {
		return many[0]
	}
	return one + "s"
}

// Verb is the form of a verb that agrees with n: one ("has", "is", "needs")
// when n is 1, else many ("have", "are", "need").
func Verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
