package chaos

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
)

// Environment of the re-executed child (limitAndExec).
const (
	execEnv  = "AGENTRACE_CHAOS_EXEC"
	asEnv    = "AGENTRACE_CHAOS_AS"
	fsizeEnv = "AGENTRACE_CHAOS_FSIZE"
)

// nofileEnv sets the child's RLIMIT_NOFILE (spec.nofile).
const nofileEnv = "AGENTRACE_CHAOS_NOFILE"

// baseAS is the address space the Go runtime reserves for itself before a program
// allocates anything (page summaries, arenas' metadata, thread stacks): about 1.3
// GB for agentrace built without cgo. A child's RLIMIT_AS is baseAS plus its
// budget.
const baseAS = 1536 << 20

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		limitAndExec()
	}
	code := m.Run()
	if workDir != "" {
		os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// limitAndExec runs in the re-executed child: it sets the limits and execs the
// target (os.Args[1:]), which keeps them. It never returns.
func limitAndExec() {
	set := func(env string, res int) {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err == nil {
				err = syscall.Setrlimit(res, &syscall.Rlimit{Cur: n, Max: n})
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "chaos: %s=%s: %v\n", env, v, err)
				os.Exit(126)
			}
		}
	}
	set(asEnv, syscall.RLIMIT_AS)
	set(fsizeEnv, syscall.RLIMIT_FSIZE)
	set(nofileEnv, syscall.RLIMIT_NOFILE)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, execEnv+"=") && !strings.HasPrefix(kv, asEnv+"=") && !strings.HasPrefix(kv, fsizeEnv+"=") && !strings.HasPrefix(kv, nofileEnv+"=") {
			env = append(env, kv)
		}
	}
	path, err := exec.LookPath(os.Args[1])
	if err == nil {
		err = syscall.Exec(path, os.Args[1:], env)
	}
	fmt.Fprintf(os.Stderr, "chaos: exec %s: %v\n", os.Args[1], err)
	os.Exit(127)
}

var (
	workDir   string // the harness's binaries
	buildOnce sync.Once
	buildErr  error
	agentrace string // the agentrace binary
	repoRoot  string
)

// chaos skips t unless chaos tests were asked for, and builds the binaries once.
func chaos(t *testing.T) *harness {
	t.Helper()
	if os.Getenv("AGENTRACE_CHAOS") != "1" {
		t.Skip("chaos tests run with `make chaos` (AGENTRACE_CHAOS=1)")
	}
	buildOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			buildErr = err
			return
		}
		repoRoot = filepath.Dir(wd)
		if workDir, buildErr = os.MkdirTemp("", "agentrace-chaos-"); buildErr != nil {
			return
		}
		agentrace = filepath.Join(workDir, "agentrace")
		if buildErr = goBuild("build", "-o", agentrace, "./cmd/agentrace"); buildErr != nil {
			return
		}
		// Every test binary inProcess needs, in one go build (its packages
		// compiled and linked in parallel): dir/<package name>.test.
		seen := map[string]bool{}
		args := []string{"test", "-c", "-o", filepath.Join(workDir, "tests") + "/"}
		for _, c := range inProcess {
			if !seen[c.pkg] {
				seen[c.pkg] = true
				args = append(args, c.pkg)
			}
		}
		buildErr = goBuild(args...)
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return &harness{t: t}
}

func goBuild(args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// testBinary is the test binary of package pkg (a path like ./replay), built by
// chaos: <package name>.test, the package name being its folder's (agentrace for
// ./cmd/agentrace).
func testBinary(t *testing.T, pkg string) string {
	t.Helper()
	b := filepath.Join(workDir, "tests", filepath.Base(pkg)+".test")
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("test binary of %s: %v", pkg, err)
	}
	return b
}

type harness struct{ t *testing.T }

// spec is how a child runs.
type spec struct {
	// budget bounds the child's memory: RLIMIT_AS is baseAS + budget, and its
	// peak resident set must stay under budget.
	budget int64
	// fsize, when set, is RLIMIT_FSIZE: a write past it fails (EFBIG), as on a
	// full disk.
	fsize int64
	dir   string   // working directory ("" for the test's)
	env   []string // added to the environment
	stdin io.Reader

	// nofile, when set, is RLIMIT_NOFILE (soft and hard), as `ulimit -n` sets it.
	nofile int64
}

// proc is a child process.
type proc struct {
	t        *testing.T
	name     string
	spec     spec
	cmd      *exec.Cmd
	stdout   testenv.SyncBuffer
	stderr   testenv.SyncBuffer
	started  time.Time
	done     chan struct{}
	exitCode int
	elapsed  time.Duration
	maxRSS   int64 // bytes
}

// start starts argv (argv[0] "agentrace" names the built binary) under sp's
// limits, in its own process group.
func (h *harness) start(sp spec, argv ...string) *proc {
	t := h.t
	t.Helper()
	if argv[0] == "agentrace" {
		argv = append([]string{agentrace}, argv[1:]...)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: filepath.Base(argv[0]) + " " + strings.Join(argv[1:], " "), spec: sp, done: make(chan struct{})}
	p.cmd = exec.Command(self, argv...)
	p.cmd.Dir = sp.dir
	p.cmd.Stdout, p.cmd.Stderr, p.cmd.Stdin = &p.stdout, &p.stderr, sp.stdin
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	env := append(os.Environ(), execEnv+"=1")
	if sp.budget > 0 {
		env = append(env, fmt.Sprintf("%s=%d", asEnv, baseAS+sp.budget))
	}
	if sp.fsize > 0 {
		env = append(env, fmt.Sprintf("%s=%d", fsizeEnv, sp.fsize))
	}
	if sp.nofile > 0 {
		env = append(env, fmt.Sprintf("%s=%d", nofileEnv, sp.nofile))
	}
	p.cmd.Env = append(env, sp.env...)
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	// The peak resident set is sampled from /proc (VmHWM of the process after its
	// exec): rusage's maxrss is no good here, the kernel charges a vforked child
	// with its parent's high-water mark at exec.
	var hwm atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		path := fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)
		for {
			if v := testenv.PeakRSS(path); v > hwm.Load() {
				hwm.Store(v)
			}
			select {
			case <-p.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	go func() {
		_ = p.cmd.Wait()
		p.elapsed = time.Since(p.started)
		st := p.cmd.ProcessState
		p.exitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.exitCode = 128 + int(ws.Signal())
		}
		p.maxRSS = hwm.Load()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.kill()
			<-p.done
		}
	})
	return p
}

// run runs argv to completion within timeout.
func (h *harness) run(sp spec, timeout time.Duration, argv ...string) *proc {
	h.t.Helper()
	p := h.start(sp, argv...)
	p.wait(timeout)
	return p
}

// wait waits for the child's end; past timeout it kills the process group and
// fails the test.
func (p *proc) wait(timeout time.Duration) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.kill()
		<-p.done
		p.t.Fatalf("%s: still running after %v: killed\nstderr:\n%s", p.name, timeout, tail(p.stderr.String()))
	}
	p.t.Logf("%s: exit %d in %v, peak RSS %.1f MiB", p.name, p.exitCode, p.elapsed.Round(time.Millisecond), float64(p.maxRSS)/(1<<20))
	if p.spec.budget > 0 && p.maxRSS > p.spec.budget {
		p.t.Errorf("%s: peak RSS %.1f MiB over its budget of %.0f MiB", p.name, float64(p.maxRSS)/(1<<20), float64(p.spec.budget)/(1<<20))
	}
	if s := p.stderr.String(); strings.Contains(s, "fatal error: ") || strings.Contains(s, "out of memory") || strings.Contains(s, "panic: ") {
		p.t.Errorf("%s: crashed:\n%s", p.name, tail(s))
	}
}

// waitFor waits until the child's stderr matches re, failing the test after
// timeout.
func (p *proc) waitFor(re string, timeout time.Duration) []string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for {
		if m := rx.FindStringSubmatch(p.stderr.String() + p.stdout.String()); m != nil {
			return m
		}
		select {
		case <-p.done:
			p.t.Fatalf("%s ended (exit %d) before printing %q:\n%s", p.name, p.exitCode, re, tail(p.stderr.String()))
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s did not print %q within %v:\n%s", p.name, re, timeout, tail(p.stderr.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop sends SIGTERM and waits up to a minute for the process to end (a server
// the test no longer needs).
func (p *proc) stop() {
	p.signal(syscall.SIGTERM)
	p.wait(minute)
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// expectExit fails the test unless the child exited with one of codes.
func (p *proc) expectExit(codes ...int) {
	p.t.Helper()
	for _, c := range codes {
		if p.exitCode == c {
			return
		}
	}
	p.t.Errorf("%s: exit %d, want %v\nstdout:\n%s\nstderr:\n%s", p.name, p.exitCode, codes, tail(p.stdout.String()), tail(p.stderr.String()))
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// waitBatch waits, a minute at most, until the replay r has flushed a batch of
// its turn log into run (more than 64 KiB on disk); it fails the test when r
// ends first, before it could be what (killed, read).
func waitBatch(t *testing.T, r *proc, run, what string) {
	t.Helper()
	deadline := time.Now().Add(minute)
	for {
		if st, err := os.Stat(filepath.Join(run, "turns.arrows")); err == nil && st.Size() > 64<<10 {
			return
		}
		select {
		case <-r.done:
			t.Fatalf("replay ended (exit %d) before it was %s:\n%s", r.exitCode, what, tail(r.stderr.String()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("replay wrote no batch within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// staleLock checks the lock file a command killed with kill -9 left beside its
// output (nothing could remove it) and removes it: nobody holds it, so the next
// writer of that output takes it.
func staleLock(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the killed command's lock file: %v", err)
	}
	defer os.Remove(path)
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("the killed command's lock %s is still held: %v", path, err)
	}
}

// noTemps fails the test if what an output claim keeps beside its output (a
// lock, a folder or file being built, an earlier output moved aside) was left
// under root.
func noTemps(t *testing.T, root string) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".agentrace-") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}
