package ingest

import (
	"fmt"

	"github.com/agentrace/agentrace/internal/jsontext"
)

// Trace lines are read with internal/jsontext, which finds the extent of values
// without decoding them: a row's large strings are decoded once, straight into
// their column, and the rest is kept as raw JSON.

// maxDepth bounds the nesting of a trace line.
const maxDepth = 512

// parseObject checks that b is exactly one JSON object (surrounding whitespace
// allowed) and calls field with each member's key token and raw value.
func parseObject(b []byte, field func(key, val []byte)) error {
	return parseObjectNumbers(b, func(key, val []byte, _ int) { field(key, val) })
}

// parseObjectNumbers is parseObject that also tells field how many number tokens
// (NaN and Infinity included) each value holds, as the validating scan counted
// them: a value with none needs no look for numbers.
func parseObjectNumbers(b []byte, field func(key, val []byte, numbers int)) error {
	s := jsontext.NewScanner(b, jsontext.JSON)
	s.LimitDepth(maxDepth)
	if s.Peek() != '{' {
		if s.End() == nil {
			return &jsontext.SyntaxError{Offset: s.Pos(), Msg: "empty line"}
		}
		if _, err := s.Value(); err != nil {
			return err
		}
		return fmt.Errorf("line is a JSON %s, not an object", jsontext.KindOf(b))
	}
	seen := 0
	member := func(key, val []byte) {
		n := s.Numbers()
		field(key, val, n-seen)
		seen = n
	}
	if err := s.Members(member); err != nil {
		return err
	}
	if err := s.End(); err != nil {
		return &jsontext.SyntaxError{Offset: s.Pos(), Msg: "trailing data after the object"}
	}
	return nil
}

// eachElement calls fn for every element of the JSON array raw (already
// scanned), until fn returns an error.
func eachElement(raw []byte, fn func(k int, val []byte) error) (err error) {
	jsontext.EachElement(raw, func(k int, v []byte) bool {
		err = fn(k, v)
		return err == nil
	})
	return err
}

// kind names the JSON type of the raw value: "string", "array", ...
func kind(raw []byte) string { return jsontext.KindOf(raw).String() }
