package simserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// serve runs Serve on a loopback port until the test ends and returns its address.
func serve(t *testing.T, cfg Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

// statusLine reads the status line of the answer on c, within d.
func statusLine(t *testing.T, c net.Conn, d time.Duration) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func request(model string, content string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"` + content + `"}],"max_tokens":4}`
}

// TestBodyLimits: a 250 MB request body once grew the sim to 6.1 GB,
// which it kept. The body is capped by the context length (refused before it is
// read when its length is declared, as it is read otherwise), tokenizing stops at
// the context length, and the memory of an outsized prompt is not kept.
func TestBodyLimits(t *testing.T) {
	cfg := tinyConfig(t)
	maxBody := MaxBodyBytes(cfg.Hardware)
	if maxBody != minMaxBody {
		t.Fatalf("tiny profile's body cap %d, want the floor %d", maxBody, minMaxBody)
	}
	if p, _ := LookupHardware(DefaultHardware); MaxBodyBytes(p) != int64(p.MaxModelLen)*bodyBytesPerToken {
		t.Errorf("default hardware's body cap %d", MaxBodyBytes(p))
	}
	addr := serve(t, cfg)
	url := "http://" + addr + "/v1/chat/completions"

	// Declared too long: 413 before a byte of it is read (the client is still
	// sending when the answer comes).
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 250<<20)
	if got := statusLine(t, c, 5*time.Second); !strings.Contains(got, "413") {
		t.Errorf("declared 250 MB: %q, want 413", got)
	}

	// Chunked, too long: 413 after maxBody bytes.
	pr, pw := io.Pipe()
	go func() {
		chunk := strings.Repeat("hello world ", 1<<16)
		io.WriteString(pw, `{"model":"`+cfg.Hardware.Model+`","messages":[{"role":"user","content":"`)
		for sent := 0; sent < 64<<20; sent += len(chunk) {
			if _, err := io.WriteString(pw, chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	resp, err := http.Post(url, "application/json", pr)
	if err != nil {
		t.Logf("chunked 64 MB: %v (the server closed the connection)", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked 64 MB: status %d, want 413", resp.StatusCode)
		}
	}
	pr.Close()

	// Under the cap but far over the context length: 400, counted only up to the
	// context length, with little memory.
	content := strings.Repeat("hello world ", int(maxBody)/12-100)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err = http.Post(url, "application/json", strings.NewReader(request(cfg.Hardware.Model, content)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "at least") {
		t.Errorf("long prompt: %d %s", resp.StatusCode, b)
	}
	// The body (4 MiB) is read into a buffer and decoded once: a small multiple of
	// it, never the 6x-and-more a full tokenization of it costs.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(10*maxBody) {
		t.Errorf("a %d-byte body allocated %d bytes", maxBody, alloc)
	}
}

// TestSlowClients: connections that sent headers and one byte
// of body were never timed out, and 19,980 of them exhausted the sim's descriptors.
// A body must arrive within BodyTimeout, an idle connection is closed after
// IdleTimeout, and past MaxConnections a connection is answered 503 and closed
// (accept never fails).
func TestSlowClients(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.HeaderTimeout, cfg.BodyTimeout, cfg.IdleTimeout, cfg.MaxConnections = 400*time.Millisecond, 300*time.Millisecond, 500*time.Millisecond, 4
	addr := serve(t, cfg)

	// Headers and one byte of a 100-byte body: 408, then closed.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	if got := statusLine(t, c, 5*time.Second); !strings.Contains(got, "408") {
		t.Errorf("a stalled body: %q, want 408", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a stalled body answered after %v", d)
	}
	c.Close()
	// net/http lingers half a second before closing a connection whose body it
	// did not read (to avoid a reset): let it go before counting.
	time.Sleep(time.Second)

	// Fill the connection limit: connections that made a request and stay open
	// (keep-alive), and one that never sends anything. One more is answered 503.
	var held []net.Conn
	for k := range cfg.MaxConnections {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if k == cfg.MaxConnections-1 {
			continue // the silent one, last so that it is still open below
		}
		body := request(cfg.Hardware.Model, "hi")
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("keep-alive request: status %d", resp.StatusCode)
		}
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if got := statusLine(t, extra, 5*time.Second); !strings.Contains(got, "503") {
		t.Errorf("a connection over the limit: %q, want 503", got)
	}
	extra.Close()
	// The idle ones are closed after the idle timeout, the silent one after the
	// header timeout; then requests are served again.
	for i, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(make([]byte, 1))
		if ne, ok := err.(net.Error); n > 0 || err == nil || ok && ne.Timeout() {
			t.Errorf("connection %d was not closed by the server: %d bytes, %v", i, n, err)
		}
		c.Close()
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the slow connections took %v to be closed", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(request(cfg.Hardware.Model, "hi")))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not served after the idle connections closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
