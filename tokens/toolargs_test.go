package tokens

import "testing"

func TestNormalizeToolCallArguments(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[{"role":"user","content":"x"}]`, `[{"role":"user","content":"x"}]`},
		{`[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\",\"n\":1.50}"}}]}]`,
			`[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":{"command":"ls","n":1.5}}}]}]`},
		// Not an object, not JSON, already an object, elsewhere than function: unchanged.
		{`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"[1]"}},{"function":{"name":"f","arguments":"{bad"}},{"function":{"name":"f","arguments":{"k":"v"}}},{"arguments":"{}"}]}]`,
			`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"[1]"}},{"function":{"name":"f","arguments":"{bad"}},{"function":{"name":"f","arguments":{"k":"v"}}},{"arguments":"{}"}]}]`},
		// Content mentioning arguments is left alone; whitespace around the object is allowed.
		{`[ {"role":"user","content":"{\"arguments\":\"{}\"}"} , {"role":"assistant","tool_calls":[{"function":{"arguments":" {\"a\": [1, 2]} ","name":"g"}}]} ]`,
			`[ {"role":"user","content":"{\"arguments\":\"{}\"}"} , {"role":"assistant","tool_calls":[{"function":{"arguments":{"a":[1,2]},"name":"g"}}]} ]`},
	} {
		if got := string(NormalizeToolCallArguments([]byte(tc.in))); got != tc.want {
			t.Errorf("NormalizeToolCallArguments(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}
