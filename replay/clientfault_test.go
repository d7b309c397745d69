package replay

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// TestClientFaultFailsTheRun: a fault of the client's own (out of file descriptors
// as under `ulimit -n 64` at concurrency 100, out of socket buffers, no local
// address for a connection), met when dialing after a few turns went through,
// is not the endpoint's: no row is an error, issuing stops, the turns in flight
// are cancelled, the run ends failed with stop_cause client_fault and an error
// that names the fault. A refused connection stays the endpoint's error.
func TestClientFaultFailsTheRun(t *testing.T) {
	d := makeDataset(t, chat("a", 4), chat("b", 4), chat("c", 4), chat("d", 4))
	f := newFake(t)
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
		call  string
		why   string
	}{
		{"EMFILE", syscall.EMFILE, "socket", "ulimit -n"},
		{"ENOBUFS", syscall.ENOBUFS, "socket", "socket buffers"},
		{"EADDRNOTAVAIL", syscall.EADDRNOTAVAIL, "connect", "local address"},
		{"ECONNREFUSED", syscall.ECONNREFUSED, "connect", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every connection is dialed anew; the fourth dial on fails as the system would.
			var dials atomic.Int64
			tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if dials.Add(1) > 4 {
					return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError(tc.call, tc.errno)}
				}
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}}
			dir := filepath.Join(t.TempDir(), "run")
			sum, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 2, NoDelays: true, transport: tr})
			m, merr := runlog.ReadManifest(dir)
			if merr != nil {
				t.Fatal(merr)
			}
			recs := readLog(t, dir)
			if tc.why == "" {
				// The endpoint's fault: failed turns; every connection refused from
				// the fifth on, so the endpoint is lost (LostAfter(2) turns in a row
				// unanswered) and the run is not whole.
				if !IsIncomplete(err) || !strings.Contains(err.Error(), "the endpoint stopped answering at ") ||
					m.State != schemas.RunFailed || m.StopCause != schemas.StopEndpointLost || m.Counts[schemas.StatusError] < LostAfter(2) {
					t.Fatalf("refused connections: err %v, state %s, stop cause %q, counts %v", err, m.State, m.StopCause, m.Counts)
				}
				if sum == nil || strings.Contains(sum.String(), "official settings") {
					t.Errorf("summary: %v", sum)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "a client fault, not the endpoint's") || !strings.Contains(err.Error(), tc.why) || !errors.Is(err, tc.errno) {
				t.Errorf("Run error: %v", err)
			}
			if m.State != schemas.RunFailed || m.StopCause != schemas.StopClientFault || !strings.Contains(m.Error, tc.why) {
				t.Errorf("manifest state %s, stop cause %q, error %q", m.State, m.StopCause, m.Error)
			}
			if sum == nil || sum.State != schemas.RunFailed || !strings.Contains(sum.String(), "FAILED: replay: a client fault") {
				t.Errorf("summary: %v", sum)
			}
			faults := 0
			for _, r := range recs {
				if r.Status == schemas.StatusError || r.Status == schemas.StatusTimeout {
					t.Errorf("row %s#%d logged as the endpoint's: %s %q", r.SessionID, r.Turn, r.Status, r.Error)
				}
				if strings.Contains(r.Error, "client fault") {
					faults++
					if r.Status == schemas.StatusNotIssued && r.IssuedNs != 0 {
						t.Errorf("a turn never sent has issued_ns %d", r.IssuedNs)
					}
				}
			}
			if faults == 0 || m.Counts[schemas.StatusOK] == 0 || m.Counts[schemas.StatusNotIssued] == 0 || m.Counts[schemas.StatusError] != 0 {
				t.Errorf("rows naming the fault %d, counts %v", faults, m.Counts)
			}
			if m.Trajectories.Failed != 0 {
				t.Errorf("trajectories %+v: none failed at the endpoint", m.Trajectories)
			}
		})
	}
}

// TestClientFaultAtTheProbe: a client fault before the first turn says so, not
// that the endpoint is unreachable.
func TestClientFaultAtTheProbe(t *testing.T) {
	d := makeDataset(t, chat("a", 1))
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", syscall.EMFILE)}
	}}
	_, err := Run(context.Background(), Options{Data: d, Endpoint: "http://127.0.0.1:1", Out: filepath.Join(t.TempDir(), "run"), Concurrency: 1, transport: tr})
	if err == nil || !strings.Contains(err.Error(), "a client fault, not the endpoint's, before issuing any turn") || strings.Contains(err.Error(), "not reachable") {
		t.Errorf("probe error: %v", err)
	}
}
