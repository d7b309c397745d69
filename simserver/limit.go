package simserver

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultMaxConnections is the connection limit of a server whose Config sets
// none: three quarters of the process's open-file limit (so that accepting, and
// answering 503 past the limit, never runs out of descriptors), at least 64.
func DefaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 4096
	}
	n := rl.Cur / 4 * 3
	if n > 1<<20 {
		n = 1 << 20
	}
	return max(int(n), 64)
}

// busyBody is the JSON answer to a connection over the limit, as writeError
// writes errors.
const busyBody = `{"error":{"message":"server busy: too many open connections","type":"ServiceUnavailableError","param":null,"code":503}}` + "\n"

// busyResponse answers a connection over the limit.
var busyResponse = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: " +
	strconv.Itoa(len(busyBody)) + "\r\n\r\n" + busyBody)

// limitListener keeps at most max connections open: Accept goes on accepting, and a
// connection past the limit is answered 503 and closed at once (never left to fail
// accept with EMFILE, never queued).
type limitListener struct {
	net.Listener
	max    int64
	active atomic.Int64
	// Rejected counts the connections answered 503.
	rejected atomic.Int64
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: int64(max)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.active.Add(1) > l.max {
			l.active.Add(-1)
			l.rejected.Add(1)
			go reject(c)
			continue
		}
		return &limitConn{Conn: c, l: l}, nil
	}
}

// reject answers 503 and closes, within a second whatever the client does.
func reject(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(busyResponse)
	_ = c.Close()
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.active.Add(-1) })
	return err
}
