package canon

import "strconv"

// Integer is any integer type a count comes in.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Count words n of a thing the one way piship prints counts: "1 file",
// "0 files", "2 files". The plural is one+"s" unless given ("1 directory",
// "3 directories"). Every printed count goes through it, so no message reads
// "1 files".
func Count[N Integer](n N, one string, many ...string) string {
	return strconv.FormatInt(int64(n), 10) + " " + Noun(n, one, many...)
}

// Of words k of n things: "1 of 2 files", "1 of 1 file" (the noun goes
// with the total).
func Of[N Integer](k, n N, one string, many ...string) string {
	return strconv.FormatInt(int64(k), 10) + " of " + Count(n, one, many...)
}

// Noun is the form of a noun (or pronoun) that goes with n: one when n is
// 1, else the plural (one+"s" unless given): Noun(n, "it", "them").
func Noun[N Integer](n N, one string, many ...string) string {
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
func Verb[N Integer](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
