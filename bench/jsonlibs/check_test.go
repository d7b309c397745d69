package jsonlibs

import (
	"encoding/json"
	"testing"

	sonic "github.com/bytedance/sonic"
	"github.com/valyala/fastjson"

	"github.com/agentrace/agentrace/internal/jsontext"
)

// TestLibrariesValidate checks that jsontext refuses what encoding/json refuses
// and logs what the fast libraries say of the same texts: fastjson's Parse and
// sonic's Valid accept bad escapes and control characters, so their speed is
// not the speed of the same work.
func TestLibrariesValidate(t *testing.T) {
	for _, s := range []string{`{"a":"\q"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{"a":NaN}`, `{"a":1}` + "\x00", `[1,]`, "{\"a\":\"\xff\"}"} {
		std := json.Valid([]byte(s))
		if got := jsontext.Valid([]byte(s), jsontext.JSON); got != std {
			t.Errorf("%q: jsontext %v, encoding/json %v", s, got, std)
		}
		var p fastjson.Parser
		_, perr := p.Parse(s)
		t.Logf("%q: encoding/json %v; fastjson.Parse %v, fastjson.Validate %v, sonic.Valid %v",
			s, std, perr == nil, fastjson.Validate(s) == nil, sonic.Valid([]byte(s)))
	}
}
