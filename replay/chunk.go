package replay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/agentrace/agentrace/internal/jsontext"
)

// The streaming path reads each chat.completion.chunk with internal/jsontext
// instead of encoding/json: it reads only the fields the client records, takes
// strings as slices of the input, and skips the rest. A chunk is validated as it
// is read: a malformed value, truncation, or anything after the value but JSON
// whitespace is an error. The rare sub-values with structure (usage, error) go
// through encoding/json, tool_calls through decodeToolCalls. Where encoding/json would decode a repeated
// key into the value already there, the scanner does the same. FuzzChunk checks
// it against encoding/json.

// errType is a value encoding/json could not store in the field it goes to.
var errType = errors.New("a value of the wrong type")

// fastMsg is a delta or message object: raw JSON values, nil when absent or null.
type fastMsg struct {
	present                              bool
	content, reasoningContent, reasoning []byte   // string tokens with quotes
	toolCalls                            [][]byte // arrays, decoded in order into one slice
}

// fastChoice is one element of "choices".
type fastChoice struct {
	index          int64
	delta, message fastMsg
	finish         []byte // string token
}

// fastChunk is what the scanner reads of a chunk. usage and errs hold the raw
// values of each "usage" and "error" key since the last null, to be decoded in
// order into one value.
type fastChunk struct {
	choices     []fastChoice
	usage, errs [][]byte
}

type chunkScanner struct {
	s   jsontext.Scanner
	c   fastChunk
	key []byte // a key with escapes, decoded
}

// parse reads one chunk; what it returns is valid until the next parse.
func (cs *chunkScanner) parse(b []byte) (*fastChunk, error) {
	cs.s = jsontext.NewScanner(b, jsontext.JSON)
	c := &cs.c
	clear(c.choices[:cap(c.choices)])
	c.choices, c.usage, c.errs = c.choices[:0], c.usage[:0], c.errs[:0]
	if cs.s.Null() { // null decodes to nothing, as with encoding/json
		return c, cs.s.End()
	}
	err := cs.s.Object(func(key []byte) error {
		switch k := cs.name(key); {
		case keyIs(k, "choices"):
			return cs.choices()
		case keyIs(k, "usage"):
			return cs.appendRaw(&c.usage)
		case keyIs(k, "error"):
			return cs.appendRaw(&c.errs)
		}
		_, err := cs.s.Value()
		return err
	})
	if err == nil {
		err = cs.s.End()
	}
	if err != nil && !jsontext.Valid(b, jsontext.JSON) {
		// As encoding/json, report a syntax error before a wrong type.
		s := jsontext.NewScanner(b, jsontext.JSON)
		_, err = s.Document()
	}
	return c, err
}

// name returns a key token's text (undecoded when it has no escapes: a key of
// invalid UTF-8 matches no ASCII name either way).
func (cs *chunkScanner) name(tok []byte) []byte {
	body := tok[1 : len(tok)-1]
	for _, c := range body {
		if c == '\\' {
			cs.key = jsontext.AppendUnquote(cs.key[:0], tok)
			return cs.key
		}
	}
	return body
}

// keyIs matches a key as encoding/json does for ASCII names: case-insensitively.
func keyIs(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// appendRaw reads a value to decode into a pointer field: null empties the list
// (the pointer is set to nil), anything else is added to it.
func (cs *chunkScanner) appendRaw(list *[][]byte) error {
	if cs.s.Null() {
		*list = (*list)[:0]
		return nil
	}
	v, err := cs.s.Value()
	if err == nil {
		*list = append(*list, v)
	}
	return err
}

// stringOrNull returns a string value's token, nil for null; any other value is
// an error (encoding/json cannot store it in a string).
func (cs *chunkScanner) stringOrNull() ([]byte, error) {
	if cs.s.Null() {
		return nil, nil
	}
	return cs.s.String()
}

// message reads a delta or message object into m, merging into what m holds (a
// repeated key merges, as encoding/json does through a pointer).
func (cs *chunkScanner) message(m *fastMsg) error {
	if cs.s.Null() {
		*m = fastMsg{}
		return nil
	}
	m.present = true
	return cs.s.Object(func(key []byte) error {
		var err error
		switch k := cs.name(key); {
		case keyIs(k, "content"):
			m.content, err = cs.stringOrNull()
		case keyIs(k, "reasoning_content"):
			m.reasoningContent, err = cs.stringOrNull()
		case keyIs(k, "reasoning"):
			m.reasoning, err = cs.stringOrNull()
		case keyIs(k, "tool_calls"):
			err = cs.appendRaw(&m.toolCalls)
		default:
			_, err = cs.s.Value()
		}
		return err
	})
}

// choices reads the choices array. As encoding/json does, a repeated "choices"
// key decodes into the elements already read, position by position, and a null
// element leaves its element as it is.
func (cs *chunkScanner) choices() error {
	c := &cs.c
	if cs.s.Null() {
		c.choices = c.choices[:0]
		return nil
	}
	old := len(c.choices)
	c.choices = c.choices[:0]
	return cs.s.Array(func(n int) error {
		if n < old {
			c.choices = c.choices[:n+1]
		} else {
			c.choices = append(c.choices, fastChoice{})
		}
		if cs.s.Null() {
			return nil
		}
		if cs.s.Peek() != '{' {
			_, err := cs.s.Value()
			return cmp.Or(err, errType)
		}
		ch := &c.choices[n]
		return cs.s.Object(func(key []byte) error {
			var err error
			switch k := cs.name(key); {
			case keyIs(k, "index"):
				if !cs.s.Null() {
					var v []byte
					if v, err = cs.s.Value(); err == nil {
						ch.index, err = strconv.ParseInt(string(v), 10, 0)
					}
				}
			case keyIs(k, "delta"):
				err = cs.message(&ch.delta)
			case keyIs(k, "message"):
				err = cs.message(&ch.message)
			case keyIs(k, "finish_reason"):
				ch.finish, err = cs.stringOrNull()
			default:
				_, err = cs.s.Value()
			}
			return err
		})
	})
}

// errSlowPath stops the tool-call scanner where it leaves a value to
// encoding/json.
var errSlowPath = errors.New("left to encoding/json")

// decodeToolCalls decodes one tool_calls array into tc as json.Unmarshal(raw, tc)
// does, with the scanner when tc is empty and the value has the common shape: an
// array, or null, of call objects whose index is an integer or null, whose id,
// type and function name are strings or null, whose function is an object, and
// whose arguments are any value (copied). A repeated key decodes into what is
// there, as with encoding/json. Anything else (a null element, a value of
// another type, a key with escapes) goes through encoding/json, which gives its
// own answer and error.
func decodeToolCalls(raw []byte, tc *[]toolCallDelta) error {
	if len(*tc) > 0 {
		return json.Unmarshal(raw, tc) // a repeated tool_calls key: into the calls there
	}
	var err error
	if *tc, err = scanToolCalls(raw, (*tc)[:0]); err == nil {
		return nil
	}
	*tc = nil // encoding/json would decode into what the scan left in the array
	return json.Unmarshal(raw, tc)
}

func scanToolCalls(raw []byte, out []toolCallDelta) ([]toolCallDelta, error) {
	s := jsontext.NewScanner(raw, jsontext.JSON)
	if s.Null() {
		return nil, s.End()
	}
	str := func(dst *string) error {
		if s.Null() {
			return nil // null leaves a string as it is
		}
		tok, err := s.String()
		if err != nil {
			return errSlowPath
		}
		if body, ok := jsontext.Verbatim(tok); ok {
			*dst = string(body)
		} else {
			*dst = string(jsontext.AppendUnquote(nil, tok))
		}
		return nil
	}
	// A key with escapes or beyond ASCII (encoding/json folds two such runes onto
	// ASCII letters) is left to encoding/json.
	plain := func(key []byte) ([]byte, bool) {
		body := key[1 : len(key)-1]
		for _, c := range body {
			if c == '\\' || c >= 0x80 {
				return nil, false
			}
		}
		return body, true
	}
	// object reads an object, calling member with each key: member reads the
	// values of the fields it knows (true), the others are skipped.
	object := func(member func(k []byte) (bool, error)) error {
		if s.Peek() != '{' {
			return errSlowPath
		}
		return s.Object(func(key []byte) error {
			k, ok := plain(key)
			if !ok {
				return errSlowPath
			}
			if known, err := member(k); known || err != nil {
				return err
			}
			_, err := s.Value()
			return err
		})
	}
	index := func(d *toolCallDelta) error {
		if s.Null() {
			d.Index = nil
			return nil
		}
		if c := s.Peek(); c != '-' && (c < '0' || c > '9') {
			return errSlowPath
		}
		v, err := s.Value()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(string(v), 10, 0)
		if err != nil {
			return errSlowPath // a fraction, an exponent or out of range: a type error
		}
		if d.Index == nil {
			d.Index = new(int)
		}
		*d.Index = int(n)
		return nil
	}
	err := s.Array(func(int) error {
		out = append(out, toolCallDelta{})
		d := &out[len(out)-1]
		return object(func(k []byte) (bool, error) {
			switch {
			case keyIs(k, "index"):
				return true, index(d)
			case keyIs(k, "id"):
				return true, str(&d.ID)
			case keyIs(k, "type"):
				return true, str(&d.Type)
			case keyIs(k, "function"):
				return true, object(func(k []byte) (bool, error) {
					switch {
					case keyIs(k, "name"):
						return true, str(&d.Function.Name)
					case keyIs(k, "arguments"):
						v, err := s.Value()
						d.Function.Arguments = bytes.Clone(v)
						return true, err
					}
					return false, nil
				})
			}
			return false, nil
		})
	})
	if err == nil {
		err = s.End()
	}
	return out, err
}
