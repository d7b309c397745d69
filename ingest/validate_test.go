package ingest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
)

// referenceAccepts restates the reference loader's checks (spec §1) with
// encoding/json, independently of the ingest parser, and fails t when the flat
// file at path would be rejected.
func referenceAccepts(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	done := map[string]bool{}
	cur, prevRole := "", ""
	prevCalls, turn, line := false, 0, 0
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("%s:%d: reference would reject: %s", path, line, fmt.Sprintf(format, a...))
	}
	for sc.Scan() {
		line++
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fail("%v", err)
		}
		if r["_type"] == "dataset_metadata" {
			continue
		}
		id, _ := r["conversation_id"].(string)
		if id == "" || id == "nan" {
			fail("conversation_id %v", r["conversation_id"])
		}
		for _, c := range id {
			if c < 32 || c > 126 {
				fail("conversation_id %q", id)
			}
		}
		if id != cur {
			if done[id] {
				fail("rows of %q not contiguous", id)
			}
			done[cur], cur, prevRole, turn = true, id, "", 0
		}
		n, ok := r["turn"].(float64)
		if !ok || int(n) != turn+1 {
			fail("turn %v after %d", r["turn"], turn)
		}
		turn++
		role, _ := r["role"].(string)
		switch role {
		case "user":
			if c, ok := r["content"].(string); (ok && c == "") || r["content"] == nil {
				fail("user content %v", r["content"])
			}
			if prevRole == "user" || (prevRole == "assistant" && prevCalls) {
				fail("user after %s", prevRole)
			}
		case "assistant":
			if prevRole == "" || prevRole == "assistant" {
				fail("assistant after %q", prevRole)
			}
			calls, has := r["tool_calls"]
			prevCalls = has && calls != nil
			if prevCalls {
				list, ok := calls.([]any)
				if !ok || len(list) == 0 {
					fail("tool_calls %v", calls)
				}
				for _, c := range list {
					m, _ := c.(map[string]any)
					fn, _ := m["function"].(map[string]any)
					_, argStr := fn["arguments"].(string)
					_, argObj := fn["arguments"].(map[string]any)
					if m["id"] == "" || m["id"] == nil || m["type"] != "function" || fn == nil || fn["name"] == "" || fn["name"] == nil || !(argStr || argObj) {
						fail("tool call %v", c)
					}
				}
			} else if c, _ := r["content"].(string); c == "" && r["content"] == nil {
				fail("assistant with neither content nor tool_calls")
			}
		case "tool":
			if prevRole != "assistant" || !prevCalls {
				fail("tool after %s", prevRole)
			}
			list, ok := r["tool_results"].([]any)
			if !ok || len(list) == 0 {
				fail("tool_results %v", r["tool_results"])
			}
			for _, x := range list {
				m, ok := x.(map[string]any)
				if _, has := m["content"]; !ok || m["tool_call_id"] == "" || m["tool_call_id"] == nil || !has {
					fail("tool result %v", x)
				}
			}
		default:
			fail("role %q", role)
		}
		prevRole = role
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if line == 0 {
		t.Fatalf("%s: empty", path)
	}
}

const (
	u1    = `{"conversation_id": "c1", "turn": 1, "role": "user", "content": "hi", "system": "sys"}`
	a2    = `{"conversation_id": "c1", "turn": 2, "role": "assistant", "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}`
	t3    = `{"conversation_id": "c1", "turn": 3, "role": "tool", "tool_results": [{"tool_call_id": "t1", "content": "ok"}]}`
	a4    = `{"conversation_id": "c1", "turn": 4, "role": "assistant", "content": "done"}`
	other = `{"conversation_id": "c2", "turn": 1, "role": "user", "content": "x"}`
)

func withTurn(row string, fields string) string {
	return strings.TrimSuffix(row, "}") + ", " + fields + "}"
}

// jsonl joins rows into file content with a trailing newline.
func jsonl(rows ...string) string { return strings.Join(rows, "\n") + "\n" }

func TestValidationRejects(t *testing.T) {
	row := func(turn int, role, rest string) string {
		s := fmt.Sprintf(`{"conversation_id": "c1", "turn": %d, "role": %q`, turn, role)
		if rest != "" {
			s += ", " + rest
		}
		return s + "}"
	}
	a2calls := func(calls string) string { return row(2, "assistant", `"tool_calls": `+calls) }
	for _, tc := range []struct {
		name, input string
		want        []string // substrings of the error, in order of appearance
	}{
		{"empty file", "", []string{"in.jsonl: empty file"}},
		{"only blank lines", "\n \n", []string{"in.jsonl: empty file"}},
		{"only a metadata record", jsonl(`{"_type": "dataset_metadata"}`), []string{"in.jsonl: empty file"}},
		{"conversation_id missing", jsonl(`{"turn": 1, "role": "user", "content": "x"}`), []string{"in.jsonl:1: turn 1 : conversation_id missing"}},
		{"conversation_id empty", jsonl(`{"conversation_id": "", "turn": 1, "role": "user", "content": "x"}`), []string{":1: ", "conversation_id is empty"}},
		{"conversation_id nan", jsonl(`{"conversation_id": "nan", "turn": 1, "role": "user", "content": "x"}`), []string{`conversation "nan" turn 1 : conversation_id is "nan"`}},
		{"control character in id", jsonl(`{"conversation_id": "a\u0001b", "turn": 1, "role": "user", "content": "x"}`), []string{"control or non-ASCII character at byte 1"}},
		{"non-ASCII id", jsonl(`{"conversation_id": "café", "turn": 1, "role": "user", "content": "x"}`), []string{"control or non-ASCII"}},
		{"rows not contiguous", jsonl(u1, a2, other, t3), []string{`in.jsonl:4: conversation "c1" turn 3 : rows of the conversation are not contiguous (it started at line 1)`}},
		{"first row not user", jsonl(row(1, "assistant", `"content": "x"`)), []string{`:1: conversation "c1" turn 1 : first row is assistant, not user`}},
		{"first row tool", jsonl(row(1, "tool", `"tool_results": [{"tool_call_id": "a", "content": "x"}]`)), []string{"first row is tool, not user"}},
		{"assistant after assistant", jsonl(u1, row(2, "assistant", `"content": "a"`), row(3, "assistant", `"content": "b"`)), []string{":3: ", "turn 3 : assistant row after an assistant row"}},
		{"user then tool", jsonl(u1, row(2, "tool", `"tool_results": [{"tool_call_id": "a", "content": "x"}]`)), []string{"tool row after a user row"}},
		{"user then user", jsonl(u1, row(2, "user", `"content": "again"`)), []string{":2: ", "user row after a user row"}},
		{"unknown role", jsonl(u1, row(2, "system", `"content": "x"`)), []string{`unknown role "system"`}},
		{"role missing", jsonl(`{"conversation_id": "c1", "turn": 1, "content": "x"}`), []string{"role missing"}},
		{"user content missing", jsonl(row(1, "user", "")), []string{"user row without content"}},
		{"user content empty", jsonl(row(1, "user", `"content": ""`)), []string{"user row with empty content"}},
		{"user after assistant with tool_calls", jsonl(u1, a2, row(3, "user", `"content": "x"`)), []string{":3: ", "user row right after an assistant row with tool_calls"}},
		{"tool after assistant without tool_calls", jsonl(u1, row(2, "assistant", `"content": "a"`), t3), []string{"tool row after an assistant row without tool_calls"}},
		{"tool after tool", jsonl(u1, a2, t3, row(4, "tool", `"tool_results": [{"tool_call_id": "t1", "content": "x"}]`)), []string{"tool row after a tool row"}},
		{"tool_results missing", jsonl(u1, a2, row(3, "tool", "")), []string{"tool row without tool_results"}},
		{"tool_results empty", jsonl(u1, a2, row(3, "tool", `"tool_results": []`)), []string{"tool_results is not a non-empty list"}},
		{"tool_results item not an object", jsonl(u1, a2, row(3, "tool", `"tool_results": ["x"]`)), []string{"tool_results[0] is a JSON string, not an object"}},
		{"tool_results empty tool_call_id", jsonl(u1, a2, row(3, "tool", `"tool_results": [{"tool_call_id": "", "content": "x"}]`)), []string{"tool_results[0] has an empty or missing tool_call_id"}},
		{"tool_results lacks content", jsonl(u1, a2, row(3, "tool", `"tool_results": [{"tool_call_id": "t1"}]`)), []string{"tool_results[0] lacks content"}},
		{"tool call empty id", jsonl(u1, a2calls(`[{"id": "", "type": "function", "function": {"name": "f", "arguments": "{}"}}]`)), []string{"tool_calls[0] has an empty or missing id"}},
		{"tool call type", jsonl(u1, a2calls(`[{"id": "a", "type": "fn", "function": {"name": "f", "arguments": "{}"}}]`)), []string{`tool_calls[0] type is "fn", not "function"`}},
		{"tool call function not object", jsonl(u1, a2calls(`[{"id": "a", "type": "function", "function": "f"}]`)), []string{"tool_calls[0].function is not an object"}},
		{"tool call empty name", jsonl(u1, a2calls(`[{"id": "a", "type": "function", "function": {"name": "", "arguments": "{}"}}]`)), []string{"tool_calls[0].function.name is empty or missing"}},
		{"tool call arguments", jsonl(u1, a2calls(`[{"id": "a", "type": "function", "function": {"name": "f", "arguments": 3}}]`)), []string{"tool_calls[0].function.arguments is 3, neither a string nor an object"}},
		{"tool_calls not a list", jsonl(u1, a2calls(`{"id": "a"}`)), []string{"tool_calls present but not a non-empty list"}},
		{"tool_calls empty list", jsonl(u1, a2calls(`[]`)), []string{"tool_calls present but not a non-empty list"}},
		{"tool call item not object", jsonl(u1, a2calls(`[1]`)), []string{"tool_calls[0] is a JSON number, not an object"}},
		{"assistant without content or tool_calls", jsonl(u1, row(2, "assistant", "")), []string{"assistant row with neither content nor tool_calls"}},
		{"turn gap", jsonl(u1, a2, row(4, "tool", `"tool_results": [{"tool_call_id": "t1", "content": "x"}]`)), []string{"turn 4 follows turn 2"}},
		{"turn not starting at 1", jsonl(`{"conversation_id": "c1", "turn": 2, "role": "user", "content": "x"}`), []string{"turn numbers start at 2, not 1"}},
		{"turn duplicated", jsonl(u1, a2, withTurn(`{"conversation_id": "c1", "role": "tool", "tool_results": [{"tool_call_id": "t1", "content": "x"}]}`, `"turn": 2`)), []string{"turn 2 duplicated"}},
		{"turn not an integer", jsonl(u1, `{"conversation_id": "c1", "turn": 2.5, "role": "assistant", "content": "x"}`), []string{"turn 2.5 is not a whole number"}},
		{"turn a non-numeric string", jsonl(u1, `{"conversation_id": "c1", "turn": "two", "role": "assistant", "content": "x"}`), []string{`turn "two" is not a number`}},
		{"turn a list", jsonl(u1, `{"conversation_id": "c1", "turn": [2], "role": "assistant", "content": "x"}`), []string{"turn is a JSON array, not a number"}},
		{"conversation_id a list", jsonl(`{"conversation_id": ["c1"], "turn": 1, "role": "user", "content": "x"}`), []string{"conversation_id is a JSON array, not a string"}},
		{"tool_results content null", jsonl(u1, a2, row(3, "tool", `"tool_results": [{"tool_call_id": "t1", "content": null}]`)), []string{"tool_results[0].content is null"}},
		{"rows out of order still numbered 1..N", jsonl(u1, row(3, "assistant", `"content": "x"`), row(4, "user", `"content": "y"`)), []string{"turn 3 follows turn 1 (a gap)"}},
		{"turn missing", jsonl(u1, `{"conversation_id": "c1", "role": "assistant", "content": "x"}`), []string{"turn missing"}},
		{"malformed JSON", jsonl(u1, `{"conversation_id": "c1", "turn": 2,, }`), []string{"in.jsonl:2: invalid JSON at byte 37: expected a key"}},
		{"line not an object", jsonl(u1, `[1, 2]`), []string{"in.jsonl:2: line is a JSON array, not an object"}},
		{"trailing data", jsonl(u1 + ` {}`), []string{"in.jsonl:1: invalid JSON at byte", "trailing data after the object"}},
		{"invalid UTF-8", jsonl(u1, `{"conversation_id": "c1", "turn": 2, "role": "assistant", "content": "a`+"\xff"+`"}`), []string{"in.jsonl:2: invalid UTF-8 at byte 72"}},
		{"truncated last line", jsonl(u1) + `{"conversation_id": "c1", "turn": 2, "role": "assis`, []string{"in.jsonl:2: truncated last line (no newline at the end of the file): invalid JSON"}},
		// Replay sends conversation C as C, then C__repeat_N (datasets.SessionID):
		// an id C__repeat_N beside C would send one session id for two trajectories.
		{"id is another's repeat session id", jsonl(u1, strings.Replace(other, `"c2"`, `"c1__repeat_2"`, 1)),
			[]string{`in.jsonl:2: conversation "c1__repeat_2" turn 1 : conversation id reads as the session id of conversation "c1" (in.jsonl:1) on its repeat 2`}},
		{"id whose repeat session id came first", jsonl(strings.Replace(other, `"c2"`, `"c1__repeat_12"`, 1), u1),
			[]string{`in.jsonl:2: conversation "c1" turn 1 : conversation "c1__repeat_12" (in.jsonl:1) reads as this conversation's session id on its repeat 12`}},
		{"every problem of a file", jsonl(row(1, "assistant", `"content": "x"`), `{"conversation_id": "c2", "turn": 1, "role": "user"}`, `nope`),
			[]string{":1: ", "first row is assistant", ":2: ", "user row without content", ":3: ", "invalid JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			if err := os.WriteFile(in, []byte(tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out", "ds")
			_, err := Run(context.Background(), Options{Out: out, Inputs: []string{in}})
			if err == nil {
				t.Fatal("ingest succeeded")
			}
			msg := strings.ReplaceAll(err.Error(), dir+"/", "")
			rest := msg
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error lacks %q (in order):\n%s", w, msg)
				}
				rest = rest[i+len(w):]
			}
			assertNothingLeft(t, filepath.Join(dir, "out"))
		})
	}
}

// TestValidationWarnings: files the reference's loader accepts (read from its
// code, agentic_inference_dataset.py at ea332753) but agentrace's own checks
// would refuse are ingested with a warning naming file, line, conversation and
// turn; --strict refuses them with the same message.
func TestValidationWarnings(t *testing.T) {
	row := func(turn int, role, rest string) string {
		s := fmt.Sprintf(`{"conversation_id": "c1", "turn": %d, "role": %q`, turn, role)
		if rest != "" {
			s += ", " + rest
		}
		return s + "}"
	}
	for _, tc := range []struct {
		name, input, want string
	}{
		{"numeric conversation_id", jsonl(`{"conversation_id": 12, "turn": 1, "role": "user", "content": "x", "system": "s"}`),
			`in.jsonl:1: conversation "12" turn 1 : conversation_id 12 is a number: the reference uses its Python str() "12"`},
		{"float conversation_id", jsonl(`{"conversation_id": 1e16, "turn": 1, "role": "user", "content": "x", "system": "s"}`),
			`conversation "1e+16" turn 1 : conversation_id 1e16 is a number`},
		{"numeric string ids", jsonl(`{"conversation_id": "007", "turn": 1, "role": "user", "content": "x", "system": "s"}`),
			`in.jsonl:1: conversation "007" : every conversation_id of the file reads as a number: the reference's pandas makes them numbers and uses "7"`},
		{"turns out of file order", jsonl(a2, u1, a4, t3), `in.jsonl:1: conversation "c1" turn 2 : rows are not in turn order in the file: sorted by turn`},
		{"float turn", jsonl(u1, withTurn(`{"conversation_id": "c1", "role": "assistant", "content": "x"}`, `"turn": 2.0`)), `turn 2 : turn 2.0 is a float: the reference reads it as 2`},
		{"string turn", jsonl(u1, withTurn(`{"conversation_id": "c1", "role": "assistant", "content": "x"}`, `"turn": "2"`)), `turn 2 : turn "2" is a string: the reference reads it as the number 2.0`},
		{"negative delay", jsonl(withTurn(u1, `"delay_seconds": -1`)), "delay_seconds -1 is negative: the reference waits 0.0s"},
		{"string delay", jsonl(withTurn(u1, `"delay_seconds": "1.5"`)), `delay_seconds "1.5" is a string: the reference waits 1.5s`},
		{"user row with tool_calls", jsonl(withTurn(u1, `"tool_calls": [{"id": "x"}]`)), "tool_calls on a user row: the reference sends them in the user message"},
		{"unanswered tool_call_id", jsonl(u1, a2, row(3, "tool", `"tool_results": [{"tool_call_id": "t9", "content": "x"}]`)),
			`:3: conversation "c1" turn 3 : tool_results[0].tool_call_id "t9" answers no tool call of the assistant row before it (turn 2)`},
		{"non-integer max_new_tokens", jsonl(withTurn(u1, `"max_new_tokens": 1.5`)), "max_new_tokens 1.5 is not a positive integer: the reference sends it as is"},
		{"system not a string", jsonl(row(1, "user", `"content": "x", "system": ["s"]`)), "system is a JSON array, not a string: not a system prompt"},
		{"reasoning not a string", jsonl(u1, row(2, "assistant", `"content": "x", "reasoning_content": 5`)), "reasoning_content is a JSON number: the reference sends it as is"},
		{"name not a string", jsonl(withTurn(u1, `"name": {"n": 1}`)), "name is a JSON object: the reference sends it as is"},
		{"intent_codes a string", jsonl(u1, row(2, "assistant", `"content": "x", "intent_codes": "I001"`)), "intent_codes is a JSON string, not a list"},
		{"user content []", jsonl(row(1, "user", `"content": [], "system": "s"`)), "user content is an empty list: the reference sends it as is"},
		{"tools not a list", jsonl(withTurn(u1, `"tools": {"a": 1}`)), "tools is a JSON object, not a list: the reference sends it as is"},
		{"no system prompt", jsonl(row(1, "user", `"content": "x"`)), "no system prompt (no row has a non-empty string system): a salted run"},
		{"integer column with gaps", jsonl(withTurn(u1, `"max_new_tokens": 100`), a2, t3, a4), "max_new_tokens is set on 1 of 4 rows: the reference's pandas reads the column as floats"},
		{"boolean column with gaps", jsonl(withTurn(u1, `"stream": false`), a2, t3, a4), "stream is set on 1 of 4 rows: the reference's pandas reads the column as floats"},
		{"imprecise float", jsonl(withTurn(u1, `"top_p": 0.95`)), "top_p: the reference's JSON reader (pandas, fast float mode) reads 0.95 as 0.9500000000000001"},
		{"id that reads as a repeat's session id", jsonl(strings.Replace(u1, `"c1"`, `"c0__repeat_2"`, 1)),
			`in.jsonl:1: conversation "c0__repeat_2" turn 1 : conversation id ends like the session id of a conversation "c0" on its repeat 2`},
		{"user row with tool_results", jsonl(withTurn(u1, `"tool_results": [{"tool_call_id": "t1", "content": "ok"}]`)), "tool_results on a user row: the reference sends its results as tool messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			if err := os.WriteFile(in, []byte(tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{in}})
			if err != nil {
				t.Fatalf("ingest: %v", err)
			}
			all := strings.ReplaceAll(strings.Join(m.Warnings, "\n"), dir+"/", "")
			if !strings.Contains(all, tc.want) || m.WarningCount != len(m.Warnings) {
				t.Fatalf("warnings lack %q (count %d):\n%s", tc.want, m.WarningCount, all)
			}
			// Exported and ingested again, the dataset is the same.
			flat := filepath.Join(dir, "export.jsonl")
			if err := Export(context.Background(), ExportOptions{Dataset: filepath.Join(dir, "ds"), Out: flat}); err != nil {
				t.Fatal(err)
			}
			m2, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds2"), Inputs: []string{flat}})
			if err != nil || m2.ContentHash != m.ContentHash {
				b, _ := os.ReadFile(flat)
				t.Fatalf("export round trip: %v, hash %s, want %s\n%s", err, m2.ContentHash, m.ContentHash, b)
			}
			_, err = Run(context.Background(), Options{Out: filepath.Join(dir, "strict"), Inputs: []string{in}, Strict: true})
			if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), dir+"/", ""), tc.want) {
				t.Fatalf("strict ingest: %v", err)
			}
			assertNothingLeft(t, filepath.Join(dir, "strict"))
		})
	}
}

// assertNothingLeft fails when a failed ingest left anything in dir.
func assertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}

func TestValidationAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(jsonl(u1, a2, t3, a4)), 0o644)
	os.WriteFile(b, []byte(jsonl(other, strings.Replace(u1, `"turn": 1`, `"turn": 1`, 1))), 0o644)
	_, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{a, b}})
	if err == nil || !strings.Contains(err.Error(), `b.jsonl:2: conversation "c1" turn 1 : conversation id also used in `+a+` (line 1): ids must be unique across files`) {
		t.Errorf("error %v", err)
	}
	// A repeat session id across files names both files' lines.
	os.WriteFile(b, []byte(jsonl(strings.Replace(other, `"c2"`, `"c1__repeat_3"`, 1))), 0o644)
	_, err = Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{a, b}})
	if err == nil || !strings.Contains(err.Error(), `b.jsonl:1: conversation "c1__repeat_3" turn 1 : conversation id reads as the session id of conversation "c1" (`+a+`:1) on its repeat 3`) {
		t.Errorf("repeat session id across files: %v", err)
	}
	// Suffixes replay never makes but the reference's scorer reads as repeats
	// (__repeat_(\d+)$: repeat 1, 0, a leading zero) are refused beside the
	// conversation they name; one that is not a number is an ordinary id.
	for i, id := range []string{"c1__repeat_1", "c1__repeat_02", "c1__repeat_0"} {
		os.WriteFile(b, []byte(jsonl(strings.Replace(other, `"c2"`, `"`+id+`"`, 1))), 0o644)
		_, err := Run(context.Background(), Options{Out: filepath.Join(dir, fmt.Sprintf("ds-suffix-%d", i)), Inputs: []string{a, b}})
		if err == nil || !strings.Contains(err.Error(), `conversation "`+id+`" turn 1 : conversation id reads as the session id of conversation "c1"`) {
			t.Errorf("%s beside c1: %v", id, err)
		}
	}
	os.WriteFile(b, []byte(jsonl(other, strings.Replace(other, `"c2"`, `"c1__repeat_x"`, 1))), 0o644)
	if _, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds-suffixes"), Inputs: []string{a, b}}); err != nil {
		t.Errorf("an id with a suffix that is no repeat: %v", err)
	}
	// The same file given twice.
	if _, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{a, a}}); err == nil || !strings.Contains(err.Error(), "ids must be unique across files") {
		t.Errorf("a file given twice: %v", err)
	}
	// Distinct ids across two files: one dataset, in input order.
	os.WriteFile(b, []byte(jsonl(other)), 0o644)
	m, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts.Conversations != 2 || len(m.Inputs) != 2 || m.Inputs[1].Path != "../b.jsonl" || m.Inputs[1].AbsPath != b {
		t.Errorf("manifest %+v", m)
	}
	// An existing directory is kept unless Overwrite.
	if _, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{a}}); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second ingest into an existing dir: %v", err)
	}
	if m2, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{a}, Overwrite: true}); err != nil || m2.Counts.Conversations != 1 {
		t.Errorf("forced ingest: %v %+v", err, m2.Counts)
	}
}

func TestProblemLimit(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var rows []string
	for i := range 30 {
		rows = append(rows, fmt.Sprintf(`{"conversation_id": "c%d", "turn": 1, "role": "assistant", "content": "x"}`, i))
	}
	os.WriteFile(in, []byte(jsonl(rows...)), 0o644)
	_, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{in}, MaxProblems: 5})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 5 || ve.Omitted != 25 || !strings.Contains(err.Error(), "and 25 more") {
		t.Fatalf("error %v", err)
	}
	if ve.Problems[0].Line != 1 || ve.Problems[0].ConversationID != "c0" || ve.Problems[0].Turn != 1 {
		t.Errorf("first problem %+v", ve.Problems[0])
	}
}

func TestLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MB file")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(u1 + "\n")
	w.WriteString(`{"conversation_id": "c1", "turn": 2, "role": "assistant", "content": "`)
	chunk := strings.Repeat("x", 1<<20)
	for range 100 {
		w.WriteString(chunk)
	}
	w.WriteString("\"}\n" + other + "\n")
	w.Flush()
	f.Close()
	_, err = Run(context.Background(), Options{Out: filepath.Join(dir, "out", "ds"), Inputs: []string{in}})
	if err == nil || !strings.Contains(err.Error(), "in.jsonl:2: line longer than the limit of 67108864 bytes") {
		t.Fatalf("error %v", err)
	}
	assertNothingLeft(t, filepath.Join(dir, "out"))
	// A small limit catches a line inside a block too.
	small := filepath.Join(dir, "small.jsonl")
	os.WriteFile(small, []byte(jsonl(u1, `{"conversation_id": "c1", "turn": 2, "role": "assistant", "content": "`+strings.Repeat("y", 200)+`"}`)), 0o644)
	_, err = Run(context.Background(), Options{Out: filepath.Join(dir, "out", "ds"), Inputs: []string{small}, MaxLineBytes: 100})
	if err == nil || !strings.Contains(err.Error(), "small.jsonl:2: line longer than the limit of 100 bytes") {
		t.Fatalf("error %v", err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(jsonl(u1, a2, t3, a4)), 0o644)
	_, err := Run(ctx, Options{Out: filepath.Join(dir, "out", "ds"), Inputs: []string{in}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	assertNothingLeft(t, filepath.Join(dir, "out"))
}

// TestCanceledMidway cancels ingests of the sample at various moments: each ends
// promptly, either complete or with context.Canceled and nothing left behind.
func TestCanceledMidway(t *testing.T) {
	sample := testenv.SampleFlat(t)
	for _, after := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		dir := t.TempDir()
		time.AfterFunc(after, cancel)
		_, err := Run(ctx, Options{Out: filepath.Join(dir, "out", "ds"), Inputs: []string{sample, sample}})
		cancel()
		switch {
		case err == nil:
			t.Errorf("cancel after %v: ingesting the same ids twice succeeded", after)
		case errors.Is(err, context.Canceled):
			assertNothingLeft(t, filepath.Join(dir, "out"))
		case strings.Contains(err.Error(), "ids must be unique across files"):
		default:
			t.Errorf("cancel after %v: %v", after, err)
		}
	}
}
