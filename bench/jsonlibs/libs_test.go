package jsonlibs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	sonic "github.com/bytedance/sonic"
	goccy "github.com/goccy/go-json"
	simdjson "github.com/minio/simdjson-go"
	"github.com/tidwall/gjson"
	"github.com/valyala/fastjson"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/testenv"
)

func libInputs(b *testing.B) map[string][][]byte {
	in := map[string][][]byte{}
	for _, f := range []string{testenv.SampleFlat(b), testenv.SampleSnapshot(b)} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		in["lines"] = append(in["lines"], bytes.Split(bytes.TrimSpace(data), []byte("\n"))...)
	}
	tok, err := os.ReadFile(filepath.Join(testenv.Tokenizer(b), "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	in["tokenizer"] = [][]byte{tok}
	chunk := []byte(`{"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":1764523000,"model":"Qwen/Qwen3.6-35B-A3B","choices":[{"index":0,"delta":{"content":" the quick brown \u00e9 fox"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	for range 2000 {
		in["chunks"] = append(in["chunks"], chunk)
	}
	return in
}

func BenchmarkLibValid(b *testing.B) {
	in := libInputs(b)
	var fp fastjson.Parser
	var pj *simdjson.ParsedJson
	libs := []struct {
		name  string
		valid func([]byte) bool
	}{
		{"jsontext", func(d []byte) bool { return jsontext.Valid(d, jsontext.JSON) }},
		{"encoding_json", json.Valid},
		{"goccy", goccy.Valid},
		{"fastjson_validate", func(d []byte) bool { return fastjson.ValidateBytes(d) == nil }},
		{"fastjson_parse", func(d []byte) bool { _, err := fp.ParseBytes(d); return err == nil }},
		{"gjson", gjson.ValidBytes},
		{"sonic", sonic.Valid},
		{"simdjson", func(d []byte) bool {
			var err error
			pj, err = simdjson.Parse(d, pj)
			return err == nil
		}},
	}
	for _, w := range []string{"lines", "chunks", "tokenizer"} {
		var size int64
		for _, l := range in[w] {
			size += int64(len(l))
		}
		for _, lib := range libs {
			if lib.name == "simdjson" && !simdjson.SupportedCPU() {
				continue
			}
			b.Run(w+"/"+lib.name, func(b *testing.B) {
				b.SetBytes(size)
				for b.Loop() {
					for _, l := range in[w] {
						if !lib.valid(l) {
							b.Fatalf("%s refuses a line", lib.name)
						}
					}
				}
			})
		}
	}
}

// BenchmarkLibMembers validates each trace line and hands out every top-level
// member's raw value: what ingest asks of the core.
func BenchmarkLibMembers(b *testing.B) {
	in := libInputs(b)
	var size int64
	for _, l := range in["lines"] {
		size += int64(len(l))
	}
	n := 0
	b.Run("jsontext", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for _, l := range in["lines"] {
				s := jsontext.NewScanner(l, jsontext.JSON)
				if err := s.Members(func(k, v []byte) { n += len(v) }); err != nil || s.End() != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("gjson", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for _, l := range in["lines"] {
				if !gjson.ValidBytes(l) {
					b.Fatal("invalid")
				}
				gjson.ParseBytes(l).ForEach(func(k, v gjson.Result) bool { n += len(v.Raw); return true })
			}
		}
	})
	var fp fastjson.Parser
	b.Run("fastjson", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for _, l := range in["lines"] {
				v, err := fp.ParseBytes(l)
				if err != nil {
					b.Fatal(err)
				}
				v.GetObject().Visit(func(k []byte, v *fastjson.Value) { n++ })
			}
		}
	})
}
