package replay

import (
	"context"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// valueCheck is a transport that counts the requests whose context carries the
// caller's value.
type valueCheck struct {
	key         any
	with, total atomic.Int64
}

func (v *valueCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	v.total.Add(1)
	if r.Context().Value(v.key) != nil {
		v.with.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestRunContextsFromCaller: every request of a run (the probe and each turn)
// carries the caller's context values: the engine derives its contexts from the
// caller's, only keeping its own end (stop issuing, cancel a grace later).
func TestRunContextsFromCaller(t *testing.T) {
	type key struct{}
	f := newFake(t)
	d := makeDataset(t, chat("a", 3), chat("b", 2))
	tr := &valueCheck{key: key{}}
	ctx := context.WithValue(t.Context(), key{}, "caller")
	sum, err := Run(ctx, Options{Data: d, Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "run"), Concurrency: 2, NoDelays: true, transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Counts[schemas.StatusOK] != 5 {
		t.Fatalf("rows %v, want 5 ok", sum.Counts)
	}
	if with, total := tr.with.Load(), tr.total.Load(); total < 5 || with != total {
		t.Errorf("%d of %d requests carried the caller's context value, want all (at least 5)", with, total)
	}
}
