package jsontext

import (
	"bytes"
	"strconv"
)

// Helpers for raw values already read by a Scanner: their kind, their members and
// elements, and Python's truth of them.

// Kind is the type of a JSON value.
type Kind uint8

const (
	Nothing Kind = iota // no value (empty or whitespace only)
	Null
	Bool
	Number // NaN, Infinity and -Infinity included
	String
	Array
	Object
)

var kindNames = [...]string{"nothing", "null", "boolean", "number", "string", "array", "object"}

// String names the kind as error messages say it: "string", "array", ...
func (k Kind) String() string { return kindNames[k] }

// KindOf tells the kind of the raw value v (leading whitespace allowed) from its
// first byte.
func KindOf(v []byte) Kind {
	i := SkipSpace(v, 0)
	if i >= len(v) {
		return Nothing
	}
	switch v[i] {
	case '"':
		return String
	case '{':
		return Object
	case '[':
		return Array
	case 't', 'f':
		return Bool
	case 'n':
		return Null
	}
	return Number
}

// The span helpers below read values already validated, in either dialect,
// without validating them again: strings end at their first quote not escaped,
// containers at their bracket (skipTrusted). They are kept apart from the
// validating scanner so that its loops carry no test for them.

// EachMember calls fn with the key token and raw value of each member of the
// object obj, a valid value (one a Scanner read), which it does not validate again;
// on anything else its calls are unspecified, but it does not panic.
func EachMember(obj []byte, fn func(key, val []byte)) {
	spanMembers(obj, fn)
}

// spanMembers walks the valid object obj as EachMember, reporting false when obj
// is not an object or its walk breaks off.
func spanMembers(obj []byte, fn func(key, val []byte)) bool {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	_, ok := walkMembers(obj, i, fn)
	return ok
}

// walkMembers walks the valid object at obj[i] == '{' as EachMember and returns
// the offset just past it; ok is false when the walk breaks off.
func walkMembers(obj []byte, i int, fn func(key, val []byte)) (end int, ok bool) {
	if i = SkipSpace(obj, i+1); i < len(obj) && obj[i] == '}' {
		return i + 1, true
	}
	for i < len(obj) && obj[i] == '"' {
		ke := StringEnd(obj, i)
		key := obj[i:ke]
		if i = SkipSpace(obj, ke); i >= len(obj) || obj[i] != ':' {
			return i, false
		}
		vs := SkipSpace(obj, i+1)
		if vs >= len(obj) {
			return vs, false
		}
		ve := skipTrusted(obj, vs)
		fn(key, obj[vs:ve])
		if i = SkipSpace(obj, ve); i >= len(obj) {
			return i, false
		}
		switch obj[i] {
		case '}':
			return i + 1, true
		case ',':
			i = SkipSpace(obj, i+1)
		default:
			return i, false
		}
	}
	return i, false
}

// EachElement calls fn with the index and raw value of each element of the array
// arr, a valid value (one a Scanner read), until fn returns false; as EachMember,
// it does not validate arr again.
func EachElement(arr []byte, fn func(i int, val []byte) bool) {
	i := SkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	if i = SkipSpace(arr, i+1); i < len(arr) && arr[i] == ']' {
		return
	}
	for k := 0; i < len(arr); k++ {
		ve := skipTrusted(arr, i)
		if !fn(k, arr[i:ve]) {
			return
		}
		if i = SkipSpace(arr, ve); i >= len(arr) || arr[i] != ',' {
			return
		}
		i = SkipSpace(arr, i+1)
	}
}

// Member is one member of an object: its key token and raw value.
type Member struct{ Key, Val []byte }

// EachElementMembers is EachElement that also gives fn the members of each element
// that is an object (nil for any other element), read in the same pass: a member's
// value is spanned once, where EachElement and then EachMember on the element
// span it twice. The members slice is reused from one call to the next.
func EachElementMembers(arr []byte, fn func(i int, val []byte, members []Member) bool) {
	i := SkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	if i = SkipSpace(arr, i+1); i < len(arr) && arr[i] == ']' {
		return
	}
	// Room for a small object's members without growing.
	var room [4]Member
	ms := room[:0]
	collect := func(key, val []byte) { ms = append(ms, Member{key, val}) }
	for k := 0; i < len(arr); k++ {
		var ve int
		var members []Member
		if arr[i] == '{' {
			ms = ms[:0]
			end, ok := walkMembers(arr, i, collect)
			if !ok {
				return
			}
			ve, members = end, ms
		} else {
			ve = skipTrusted(arr, i)
		}
		if !fn(k, arr[i:ve], members) {
			return
		}
		if i = SkipSpace(arr, ve); i >= len(arr) || arr[i] != ',' {
			return
		}
		i = SkipSpace(arr, i+1)
	}
}

// EachNumber calls fn with every number token of the valid value v (NaN,
// Infinity and -Infinity included), in document order, member keys aside. It
// reads v in one pass: outside strings a number is the only token that starts with
// '-', a digit, 'N' or 'I', so it needs no walk of the nesting (which would span a
// nested value once per level).
func EachNumber(v []byte, fn func(tok []byte)) {
	for i := 0; i < len(v); {
		switch c := v[i]; {
		case c == '"':
			i = StringEnd(v, i)
		case c == '-' || isDigit(c) || c == 'N' || c == 'I':
			j := i + 1
			for j < len(v) && v[j] != ',' && v[j] != '}' && v[j] != ']' && v[j] != ' ' && v[j] != '\t' && v[j] != '\n' && v[j] != '\r' {
				j++
			}
			fn(v[i:j])
			i = j
		default:
			i++
		}
	}
}

// Lookup sets vals[k] to the raw value of the member of the object obj whose key
// decodes to keys[k], the last of duplicate keys winning (Scanner.Fields); obj is
// a valid value, not validated again. It reports false when obj is not an object.
func Lookup(obj []byte, keys []string, vals [][]byte) bool {
	return spanMembers(obj, func(key, val []byte) {
		if k := keyIndex(key, keys); k >= 0 {
			vals[k] = val
		}
	})
}

// Truthy is Python's bool() of the value json.loads gives for the raw value v:
// false for nothing, null, false, zero (in any spelling), "", [] and {}.
func Truthy(v []byte) bool {
	i := SkipSpace(v, 0)
	if i >= len(v) {
		return false
	}
	switch v[i] {
	case 'n', 'f':
		return false
	case 't', 'N', 'I':
		return true
	case '"':
		return i+1 < len(v) && v[i+1] != '"'
	case '[', '{':
		j := SkipSpace(v, i+1)
		return j < len(v) && v[j] != ']' && v[j] != '}'
	}
	// A number: an integer is zero when all its digits are; a float (it has a
	// fraction or an exponent) is zero also when it underflows, as 1e-400 does.
	num := v[i:]
	if len(num) > 1 && num[1] == 'I' { // -Infinity
		return true
	}
	if bytes.ContainsAny(num, ".eE") {
		x, _ := strconv.ParseFloat(string(bytes.TrimRight(num, " \t\n\r")), 64)
		return x != 0
	}
	return bytes.ContainsAny(num, "123456789")
}
