package runread

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

func TestMergeToolCalls(t *testing.T) {
	tests := []struct {
		name, in string
		want     []schemas.ToolCall
		json     string // the merged JSON, "" to skip
		err      string // the malformed entry reported, "" for none
	}{
		{"deltas by index, arguments joined, sorted",
			`[[{"index":1,"id":"b","function":{"name":"bash","arguments":"{\"a\":"}}],[{"index":0,"id":"a","type":"function","function":{"name":"x","arguments":"{}"}}],[{"index":1,"function":{"arguments":"1}"}}]]`,
			[]schemas.ToolCall{{Index: 0, ID: "a", Type: "function", Function: schemas.ToolFunction{Name: "x", Arguments: "{}"}},
				{Index: 1, ID: "b", Type: "function", Function: schemas.ToolFunction{Name: "bash", Arguments: `{"a":1}`}}},
			`[{"type":"function","id":"a","function":{"arguments":"{}","name":"x"}},{"type":"function","id":"b","function":{"arguments":"{\"a\":1}","name":"bash"}}]`, ""},
		{"missing index is 0, empty values do not replace",
			`[[{"id":"a","function":{"name":"bash","arguments":"x"}}],[{"id":"","function":{"name":"","arguments":"y"}}]]`,
			[]schemas.ToolCall{{Index: 0, ID: "a", Type: "function", Function: schemas.ToolFunction{Name: "bash", Arguments: "xy"}}}, "", ""},
		{"whole calls kept", `[{"id":"a","type":"function","function":{"name":"bash","arguments":{"command":"ls"}}}]`,
			[]schemas.ToolCall{{Index: 0, ID: "a", Type: "function", Function: schemas.ToolFunction{Name: "bash", Arguments: `{"command":"ls"}`}}},
			`[{"id":"a","type":"function","function":{"name":"bash","arguments":{"command":"ls"}}}]`, ""},
		{"empty", `[]`, nil, "", ""},
		{"a delta that is not an object is left out and reported",
			`[[{"index":0,"function":{"name":"bash","arguments":"x"}},5],[{"index":0,"function":{"arguments":"y"}}]]`,
			[]schemas.ToolCall{{Index: 0, Type: "function", Function: schemas.ToolFunction{Name: "bash", Arguments: "xy"}}}, "",
			"tool_calls[0][1]: not an object"},
		{"a chunk that is not a list is left out and reported",
			`[[{"function":{"arguments":"x"}}],{"index":0}]`,
			[]schemas.ToolCall{{Index: 0, Type: "function", Function: schemas.ToolFunction{Arguments: "x"}}}, "",
			"tool_calls[1] is not a list of deltas"},
		{"arguments that are not a string are left out and reported",
			`[[{"id":7,"function":{"name":"bash","arguments":{"a":1}}}]]`,
			[]schemas.ToolCall{{Index: 0, Type: "function", Function: schemas.ToolFunction{Name: "bash"}}},
			`[{"type":"function","function":{"arguments":"","name":"bash"}}]`,
			"tool_calls[0][0]: id is not a string; function.arguments is not a string"},
		{"a whole call without a function is left out and reported",
			`[{"id":"a","function":{"name":"bash","arguments":"x"}},{"id":"b"}]`,
			[]schemas.ToolCall{{Index: 0, ID: "a", Function: schemas.ToolFunction{Name: "bash", Arguments: "x"}}}, "",
			"tool_calls[1] is not a call object with a function object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, got, err := mergeToolCalls(json.RawMessage(tt.in))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if tt.json != "" && string(js) != tt.json {
				t.Errorf("JSON %s\nwant %s", js, tt.json)
			}
			if msg := fmt.Sprint(err); (err != nil || tt.err != "") && msg != tt.err {
				t.Errorf("error %q, want %q", msg, tt.err)
			}
		})
	}
}

func TestDecodeEventLineRejects(t *testing.T) {
	for _, line := range []string{
		`{"event_type":"sample.issued","turn":1.0,"conversation_id":"c"}`,
		`{"event_type":"sample.issued","turn":true,"conversation_id":"c"}`,
		`{"event_type":"sample.issued","turn":1,"conversation_id":null}`,
		`{"event_type":"sample.issuedx","turn":1,"conversation_id":"c"}`,
		`{"event_type":"sample.complete","turn":1,"conversation_id":"c","data":["TextModelOutput",1]}`,
		`{"event_type":"sample.complete","turn":1,"conversation_id":"c","data":["TextModelOutput","a",null,null,5]}`,
		`{"event_type":"sample.complete","turn":1,"conversation_id":"c","data":["Nope"]}`,
		`{"event_type":"sample.complete","turn":1,"conversation_id":"c","data":{"output":"a"}}`,
		`["sample.issued"]`,
		`{"event_type":"sample.issued","turn":1,"conversation_id":"c","timestamp_ns":NaN}`,
		`{"event_type":"sample.issued","turn":1,"conversation_id":"c"} {}`,
		`{"event_type":"sample.issued","turn":1,"conversation_id":"c",}`,
		`{"event_type":"sample.issued","turn":1,"conversation_id":"c","data":[]}`,
		`{"event_type":"sample.issued","turn":1,"conversation_id":"c","data":[1]}`,
	} {
		if _, ok, why := DecodeEvent([]byte(line), false); ok || why == "" {
			t.Errorf("accepted %s", line)
		}
	}
	e, ok, _ := DecodeEvent([]byte(`  {"event_type":"sample.complete","turn":3,"conversation_id":"c__repeat_2","sample_uuid":"u","data":["TextModelOutput"],"worker_id":7}  `), false)
	if !ok || e.Turn != 3 || e.Conv != "c__repeat_2" || e.UUID != "u" {
		t.Errorf("rejected a valid line: %+v", e)
	}
	// Escaped keys and values decode; a prompt is not decoded, whatever it holds.
	e, ok, why := DecodeEvent([]byte(`{"event_\u0074ype":"sample.issued","turn":2,"conversation_id":"sim_\u0031","data":["PromptData",null,null,[{"role":"user","content":"x"}],{"weird":[1,2,{}]}]}`), false)
	if !ok || e.Type != "sample.issued" || e.Conv != "sim_1" || e.Turn != 2 {
		t.Errorf("escaped line: %+v %s", e, why)
	}
}

// BenchmarkDecodeEventLine decodes an issued event carrying a 100 KB prompt and
// its complete event, as the reference writes them (the JSON part of
// BenchmarkReadReferenceEvents).
func BenchmarkDecodeEventLine(b *testing.B) {
	prompt, _ := json.Marshal(strings.Repeat("def f(x):\n    return x  # a \"quoted\" line\n", 2500))
	issued := []byte(fmt.Sprintf(`{"event_type":"sample.issued","timestamp_ns":1,"sample_uuid":"u1","conversation_id":"code1__repeat_1","turn":1,"data":["PromptData",null,null,[{"role":"user","content":%s}],null,null,null,null]}`, prompt))
	complete := []byte(`{"event_type":"sample.complete","timestamp_ns":2,"sample_uuid":"u1","conversation_id":"code1__repeat_1","turn":1,"data":["TextModelOutput",["ok"],null,[[{"index":0,"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"python -m pytest\"}"}}]]]}`)
	b.SetBytes(int64(len(issued) + len(complete)))
	for b.Loop() {
		if _, ok, why := DecodeEvent(issued, false); !ok {
			b.Fatal(why)
		}
		if _, ok, why := DecodeEvent(complete, false); !ok {
			b.Fatal(why)
		}
	}
}
