package datasets

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/schemas"
	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go"
)

// TestFastSnappyRoundTrip compresses pages below and above splitSnappyBytes
// (the larger ones in two halves on two goroutines) and checks that each is one
// valid Snappy block giving the page back, whatever the bytes: text that repeats
// across the cut, random bytes that do not compress, and mixes.
func TestFastSnappyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	text := bytes.Repeat([]byte(`{"role":"tool","content":"def f(x):\n    return x + 1\n"} `), 20000)
	random := make([]byte, 3<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	mixed := append(append([]byte(nil), text[:200<<10]...), random[:200<<10]...)
	cases := []struct {
		name string
		page []byte
	}{
		{"empty", nil},
		{"tiny", []byte("ab")},
		{"below split", text[:splitSnappyBytes-1]},
		{"at split", text[:splitSnappyBytes]},
		{"odd length", text[:splitSnappyBytes*3+7]},
		{"text 1 MB", text[:1<<20]},
		{"random 3 MB", random},
		{"text then random", mixed},
		{"random then text", append(append([]byte(nil), random[:150<<10]...), text[:150<<10]...)},
	}
	c := &fastSnappy{}
	var dst []byte
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			// dst is reused, as parquet-go does, so that a stale byte would show.
			dst, err = c.Encode(dst[:0], tc.page)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := s2.DecodedLen(dst); err != nil || n != len(tc.page) {
				t.Fatalf("decoded length %d (%v), want %d", n, err, len(tc.page))
			}
			got, err := s2.Decode(nil, dst)
			if err != nil {
				t.Fatalf("s2.Decode: %v", err)
			}
			if !bytes.Equal(got, tc.page) {
				t.Fatalf("round trip differs (%d bytes back of %d)", len(got), len(tc.page))
			}
			back, err := c.Decode(nil, dst)
			if err != nil || !bytes.Equal(back, tc.page) {
				t.Fatalf("fastSnappy.Decode: %v", err)
			}
			// The halves, whatever GOMAXPROCS is where the test runs.
			halves, err := s2.Decode(nil, c.encodeHalves(nil, tc.page))
			if err != nil || !bytes.Equal(halves, tc.page) {
				t.Fatalf("encodeHalves does not decode back (%v)", err)
			}
		})
	}
}

// TestWriteRowsMatchSchemas holds the rows the writer hands to parquet-go to the
// dataset contract: the same columns, types and optionality as schemas.Message and
// schemas.Turn, so a table reads back into them without conversion.
func TestWriteRowsMatchSchemas(t *testing.T) {
	for _, tc := range []struct{ written, contract any }{{messageRow{}, schemas.Message{}}, {turnRow{}, schemas.Turn{}}} {
		w, c := parquet.SchemaOf(tc.written), parquet.SchemaOf(tc.contract)
		if !parquet.EqualNodes(w, c) {
			t.Errorf("%T writes\n%v\nthe contract %T is\n%v", tc.written, w, tc.contract, c)
		}
	}
}

// sparseValues are missing (0) and present (1) values in a pattern that
// parquet-go v0.32, given in one call to a non-pointer optional field, writes
// with a missing one (row 130) as a value.
const sparseValues = "0010000000000000000000000010010000001000000010010000100000000000000000010000000001001000000100000100010000001001001001000000000001000000000000000"

// TestWriterNulls writes missing values among present ones, in the pattern
// parquet-go's non-pointer optional path mis-writes, and reads each optional
// column back: null exactly where the value is missing ("" or 0), and the rows
// read back as written.
func TestWriterNulls(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wantNull = map[string][]bool{}
	var allMsgs []schemas.Message
	var allTurns []schemas.Turn
	for ci := range 3 {
		id := fmt.Sprintf("c%d", ci)
		c := &schemas.Conversation{ConversationID: id, Index: int32(ci), Domain: schemas.DomainCoding, Source: "x.jsonl"}
		if ci == 1 {
			c.System, c.Metadata = "be brief", `{"k":1}`
		}
		var msgs []schemas.Message
		var turns []schemas.Turn
		present := func(k int) bool { return sparseValues[k] == '1' }
		for k := range len(sparseValues) - 1 {
			m := schemas.Message{ConversationID: id, Seq: int32(k), Turn: int32(k + 1), Role: schemas.RoleUser}
			if present(k) {
				m.ToolCalls, m.IntentCodesJSON, m.Extra = `[{"id":"a"}]`, `["I001"]`, `{"x":1}`
			}
			wantNull["tool_calls"] = append(wantNull["tool_calls"], !present(k))
			wantNull["intent_codes"] = append(wantNull["intent_codes"], !present(k))
			wantNull["extra"] = append(wantNull["extra"], !present(k))
			msgs = append(msgs, m)
			tr := schemas.Turn{ConversationID: id, ConvIndex: int32(ci), Domain: schemas.DomainCoding, Turn: int32(k + 1),
				ClientIndex: int32(k), Role: schemas.RoleUser, MsgStart: int32(k), MsgEnd: int32(k + 1)}
			if present(k + 1) {
				tr.Tools, tr.Params, tr.Inherited, tr.MaxTokens, tr.ExpectedTurn = `[]`, `{"temperature":0}`, `{"stream":true}`, 256, int32(k+2)
			}
			for _, col := range []string{"tools", "params", "inherited", "max_tokens", "expected_turn"} {
				wantNull[col] = append(wantNull[col], !present(k+1))
			}
			turns = append(turns, tr)
		}
		c.Messages, c.ClientTurns = int32(len(msgs)), int32(len(turns))
		wantNull["system_prompt"] = append(wantNull["system_prompt"], ci != 1)
		wantNull["metadata"] = append(wantNull["metadata"], ci != 1)
		if err := w.Add(c, msgs, turns); err != nil {
			t.Fatal(err)
		}
		allMsgs, allTurns = append(allMsgs, msgs...), append(allTurns, turns...)
	}
	if _, err := w.Close(schemas.DatasetManifest{}); err != nil {
		t.Fatal(err)
	}
	for col, want := range wantNull {
		file := schemas.MessagesFile
		switch col {
		case "system_prompt", "metadata":
			file = schemas.ConversationsFile
		case "tools", "params", "inherited", "max_tokens", "expected_turn":
			file = schemas.TurnsFile
		}
		var got []bool
		err := infile.ReadColumns(context.Background(), filepath.Join(dir, file), []string{col}, true, func(int64) {}, func(_ int, _ int64, v parquet.Value) error {
			got = append(got, v.IsNull())
			return nil
		})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s %s: null %v, want %v (%v)", file, col, got, want, err)
		}
	}
	d, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Manifest.SchemaVersion != schemas.DatasetVersion {
		t.Errorf("schema version %q", d.Manifest.SchemaVersion)
	}
	if d.Conversations[1].System != "be brief" || d.Conversations[0].System != "" || d.Conversations[1].Metadata != `{"k":1}` {
		t.Errorf("conversations read back %+v", d.Conversations)
	}
	if !slices.EqualFunc(d.Turns, allTurns, func(a, b schemas.Turn) bool { return a == b }) {
		t.Errorf("turns read back differ")
	}
	var got []schemas.Message
	for ci := range d.Conversations {
		got = append(got, d.Messages(ci)...)
	}
	if !slices.EqualFunc(got, allMsgs, func(a, b schemas.Message) bool {
		return a.ToolCalls == b.ToolCalls && a.IntentCodesJSON == b.IntentCodesJSON && a.Extra == b.Extra && bytes.Equal(a.Wire, b.Wire)
	}) {
		t.Errorf("messages read back differ")
	}
}
