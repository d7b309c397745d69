package replay

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/schemas"
)

// countConn counts the writes made on a connection.
type countConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestRequestWrites: the transport sends a turn's request in as few writes as
// its write buffer allows: headers and body together in one when they fit
// (net/http flushes the headers apart, one more write and segment a turn, for
// any body but an in-memory reader), and a body past the buffer in one more,
// straight from the slot's buffer (bodyConn). The probe's GET is one write.
func TestRequestWrites(t *testing.T) {
	big := tconv{id: "big", system: "You are agent big.", rows: []trow{
		{role: schemas.RoleUser, content: strings.Repeat("x", 100<<10)},
		{role: schemas.RoleAssistant, content: "ok"},
		{role: schemas.RoleUser, content: "more"},
		{role: schemas.RoleAssistant, content: "ok"},
		{role: schemas.RoleUser, content: "again"},
	}}
	for _, tc := range []struct {
		name    string
		conv    tconv
		perTurn int64
	}{
		{"small bodies", chat("small", 3), 1},
		{"bodies past the write buffer", big, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			d := makeDataset(t, tc.conv)
			var writes atomic.Int64
			var d0 net.Dialer
			tr := newTransport(&settings{slots: 1}, func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := d0.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return bodyConn{countConn{c, &writes}}, nil
			})
			defer tr.CloseIdleConnections()
			sum, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "run"), Concurrency: 1, NoDelays: true, transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Counts[schemas.StatusOK] != 3 {
				t.Fatalf("rows %v, want 3 ok", sum.Counts)
			}
			if got, want := writes.Load(), 1+3*tc.perTurn; got != want {
				t.Errorf("%d writes for the probe and 3 turns, want %d (%d a turn)", got, want, tc.perTurn)
			}
		})
	}
}

// TestNextBody: a trajectory's bodies built as replay builds them, each into
// the buffer that held the body two turns before (nextBody), are AppendBody's;
// the room estimated from the first body holds the last one with little slack
// (bodyRoom), and a buffer never grows past that room.
func TestNextBody(t *testing.T) {
	d := sampleDataset(t)
	prof := mustProfile(t, "qwen3.6-35b-a3b")
	for _, o := range []datasets.BodyOptions{
		{Profile: prof, Salt: true, Repeat: 3, Stream: true, IncludeUsage: true},
		{Stream: true, ClearGeneratedCache: true},
	} {
		for ci := range d.Conversations {
			turns := d.ConversationTurns(ci)
			last := &turns[len(turns)-1]
			var bufs [2][]byte
			var held [2]*schemas.Turn
			room := 0
			for i := range turns {
				b := i % 2
				bufs[b] = nextBody(d, bufs[b], held[b], &turns[i], o, room)
				held[b] = &turns[i]
				if want := d.AppendBody(nil, &turns[i], o); !bytes.Equal(bufs[b], want) {
					t.Fatalf("conversation %d turn %d: the body differs from AppendBody's", ci, i)
				}
				if i == 0 {
					room = bodyRoom(bufs[b], &turns[0], last)
					if n := len(d.AppendBody(nil, last, o)); room < n || room > n+4<<10 {
						t.Errorf("conversation %d (%+v): room %d for a last body of %d bytes", ci, o, room, n)
					}
				}
				if i > 1 && cap(bufs[b]) > room {
					t.Errorf("conversation %d turn %d: a buffer of %d bytes, past the room %d", ci, i, cap(bufs[b]), room)
				}
			}
		}
	}
}
