package tokens

import (
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Hugging Face's NFC normalizer (tokenizers' normalizers::unicode::NFC) runs
// the unicode-normalization-alignments crate, whose tables are Unicode 9.0.0's
// (its UNICODE_VERSION). Go's norm follows a later Unicode (15.0.0 here), so
// the two differ exactly on the characters assigned after 9.0 that take part
// in normalization: to Hugging Face they are unknown, that is starters
// (combining class 0) with no decomposition that compose with nothing, where
// Go reorders them among marks, lets a mark compose past them, or composes
// them. Every other character has the same properties in both (Unicode's
// stability policy: an assigned character's decomposition and combining class
// never change, and a new composite of older characters is excluded from
// composition).

// lateMarks are the code points not assigned in Unicode 9.0.0 (Unicode's
// DerivedAge) that Go's tables give a nonzero combining class, a canonical
// decomposition, or a place in one (U+11930 and U+11935, the parts of
// U+11938), in ascending order.
var lateMarks = [][2]rune{
	{0x07FD, 0x07FD}, {0x0898, 0x089F}, {0x08CA, 0x08D3}, {0x09FE, 0x09FE}, {0x0C3C, 0x0C3C},
	{0x0D3B, 0x0D3C}, {0x0EBA, 0x0EBA}, {0x1715, 0x1715}, {0x1ABF, 0x1ACE}, {0x1DF6, 0x1DFA},
	{0xA82C, 0xA82C}, {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF},
	{0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x1133B, 0x1133B},
	{0x1145E, 0x1145E}, {0x11839, 0x1183A}, {0x11930, 0x11930}, {0x11935, 0x11935},
	{0x11938, 0x11938}, {0x1193D, 0x1193E}, {0x11943, 0x11943}, {0x119E0, 0x119E0},
	{0x11A34, 0x11A34}, {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42},
	{0x11D44, 0x11D45}, {0x11D97, 0x11D97}, {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1},
	{0x1E08F, 0x1E08F}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF},
	{0x1E4EC, 0x1E4EF},
}

// isLateMark reports whether r is in lateMarks.
func isLateMark(r rune) bool {
	if r < lateMarks[0][0] {
		return false
	}
	i := sort.Search(len(lateMarks), func(i int) bool { return lateMarks[i][1] >= r })
	return i < len(lateMarks) && lateMarks[i][0] <= r
}

// hasLateMark reports whether s holds a rune of lateMarks (none below
// U+07FD, whose UTF-8 starts with 0xDF).
func hasLateMark(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < 0xDF {
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if isLateMark(r) {
			return true
		}
		i += w
	}
	return false
}

// nfc is NFC as Hugging Face's normalizer computes it. Text Go finds in NFC
// is in Hugging Face's too (its later marks only block more). Otherwise Go's
// NFC is right unless the text holds a late mark, or Go followed the
// Stream-Safe Text Format, which inserts U+034F (combining grapheme joiner)
// into a run of more than 30 non-starters and reorders only within each piece
// (the crate does neither): then nfcFull normalizes the text whole.
func nfc(s string) string {
	if norm.NFC.IsNormalString(s) {
		return s
	}
	if hasLateMark(s) {
		return nfcFull(s)
	}
	out := norm.NFC.String(s)
	if strings.Count(out, "\u034f") != strings.Count(s, "\u034f") {
		return nfcFull(s)
	}
	return out
}

// cccHF is the canonical combining class of r in Unicode 9.0.0.
func cccHF(r rune) int {
	if isLateMark(r) {
		return 0
	}
	return int(norm.NFD.PropertiesString(string(r)).CCC())
}

// nfcFull is Unicode's NFC with Unicode 9.0.0's properties and without the
// stream-safe limit: full canonical decomposition, canonical ordering of every
// run of non-starters (a stable sort by combining class), then canonical
// composition; a primary composite of two characters is found by composing the
// pair alone.
func nfcFull(s string) string {
	var rs []rune
	for _, r := range s {
		if isLateMark(r) {
			rs = append(rs, r)
			continue
		}
		if d := norm.NFD.PropertiesString(string(r)).Decomposition(); d != nil {
			rs = append(rs, []rune(string(d))...)
		} else {
			rs = append(rs, r)
		}
	}
	for i := 0; i < len(rs); {
		if cccHF(rs[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && cccHF(rs[j]) != 0 {
			j++
		}
		run := rs[i:j]
		sort.SliceStable(run, func(a, b int) bool { return cccHF(run[a]) < cccHF(run[b]) })
		i = j
	}
	out := make([]rune, 0, len(rs))
	starter, last := -1, -1 // last: class of the last character kept after the starter, -1 for none
	for _, r := range rs {
		c := cccHF(r)
		if starter >= 0 && (last == -1 || last != 0 && last < c) && !isLateMark(r) && !isLateMark(out[starter]) {
			if comp := []rune(norm.NFC.String(string(out[starter]) + string(r))); len(comp) == 1 {
				out[starter] = comp[0]
				continue
			}
		}
		if c == 0 {
			starter, last = len(out), -1
		} else {
			last = c
		}
		out = append(out, r)
	}
	return string(out)
}
