// Package jsonlibs measures internal/jsontext, agentrace's JSON core, against the
// maintained Go JSON libraries that could replace it (encoding/json, goccy/go-json,
// valyala/fastjson, tidwall/gjson, bytedance/sonic, minio/simdjson-go), on the
// inputs of its hot paths: the shared trace sample's lines (ingest), a
// chat.completion chunk (replay) and Qwen3's tokenizer.json (tokens).
// TestLibrariesValidate shows which of them validate what encoding/json refuses.
//
// It is a module of its own so that these libraries never become dependencies of
// agentrace: `cd bench/jsonlibs && AGENTRACE_SHARED=... AGENTRACE_TOKENIZER=...
// go test -bench . -benchtime 0.3s -count 4`.
package jsonlibs
