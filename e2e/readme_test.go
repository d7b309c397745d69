package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
)

// readmeFiles are the pages whose fenced blocks this test runs, in the order it
// runs them: the README, then the docs pages that carry its commands on (a block
// of a later page may use what an earlier one wrote).
var readmeFiles = []string{"README.md", "docs/replay.md", "docs/commands.md", "docs/queries.md"}

// readmeBlock is one fenced block of one of readmeFiles.
type readmeBlock struct {
	file string // the page, relative to the repository root
	line int    // line of the opening fence (1-based)
	lang string // sh, sql, or "" (an output or a synopsis)
	text string // the lines between the fences
	from string // the folder of a leading "# from FOLDER/" line, else ""
}

// key is what identifies a block in readmePlans: its first line that is neither
// blank nor a comment.
func (b readmeBlock) key() string {
	for _, l := range strings.Split(b.text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}

// commands returns the block's shell commands: lines joined across trailing
// backslashes, blank and comment lines left out.
func (b readmeBlock) commands() []string {
	var cmds []string
	cur := ""
	for _, l := range strings.Split(b.text, "\n") {
		l = strings.TrimSpace(l)
		if cur == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`)
			continue
		}
		cmds = append(cmds, cur+l)
		cur = ""
	}
	return cmds
}

// where names a block in messages: its page and line.
func (b readmeBlock) where() string { return fmt.Sprintf("%s line %d", b.file, b.line) }

// readmeBlocks returns every fenced block of readmeFiles, in order.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	for _, name := range readmeFiles {
		blocks = append(blocks, fileBlocks(t, name)...)
	}
	return blocks
}

// fileBlocks returns every fenced block of one page, in order.
func fileBlocks(t *testing.T, name string) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), name))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	var body []string
	from := regexp.MustCompile(`^# from ([^ ]+?)/?$`)
	for i, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "```") {
			if cur != nil {
				body = append(body, l)
			}
			continue
		}
		if cur == nil {
			cur = &readmeBlock{file: name, line: i + 1, lang: strings.TrimSpace(strings.TrimPrefix(l, "```"))}
			body = nil
			continue
		}
		cur.text = strings.Join(body, "\n")
		if len(body) > 0 {
			if m := from.FindStringSubmatch(strings.TrimSpace(body[0])); m != nil {
				cur.from = m[1]
			}
		}
		blocks = append(blocks, *cur)
		cur = nil
	}
	if cur != nil {
		t.Fatalf("%s: a fenced block is never closed", cur.where())
	}
	return blocks
}

// standIn replaces, in a README command before it runs, what this machine cannot
// provide (a GPU server, the official dataset, hours of sweep) by what stands in for
// it; why says what and why. A stand-in that matches nothing in its block fails the
// test: the README changed and the plan must follow.
type standIn struct{ from, to, why string }

// readmePlan says how the test treats one README block, found by the block's key
// (its first command line, or first line) starting with prefix.
type readmePlan struct {
	prefix string
	// one of: "run" (every command, in dir; a command ending in a comment "# exit N"
	// must exit N), "path" (the line that puts agentrace on PATH: run first, in the
	// checkout, and the PATH it makes is the only change to the user's environment
	// every other block runs with), "synopsis" (each line's subcommand and flags
	// exist: its --help lists them), "demo-output" (the demo's closing table has the
	// block's layout), "make" (the make targets exist), "not run" (reason).
	how    string
	dir    string // for "run": demo-out (the demo's output), or a scratch folder laid out as the repository root
	prep   string // for "run": a bash script run in dir first (the stand-ins' files)
	stands []standIn
	reason string // for "not run", and what stands in for it
}

// readmePlans lists every non-SQL block of readmeFiles (the SQL blocks are all run
// with DuckDB in demo-out/). A block that no plan matches fails the test.
var readmePlans = []readmePlan{
	{prefix: "make demo", how: "make",
		reason: "`make test` runs this test (it cannot run itself) and `make demo` is `agentrace demo --out demo-out`, " +
			"which this test runs with two points (--concurrency 1,8 --speedup 200) to stay short; " +
			"checked: both targets exist and `make -n demo` runs the demo into demo-out"},
	{prefix: "ruleset ", how: "demo-output"},
	{prefix: "traces.jsonl ─", how: "not run", reason: "a diagram of the pipeline, not a command"},
	{prefix: `export PATH="$PWD/bin:$PATH"`, how: "path"},
	{prefix: "# from demo-out/", how: "run", dir: "demo-out"},
	{prefix: "agentrace synth    --scale 1", how: "synopsis"},
	{prefix: "sglang serve", how: "not run",
		reason: "starts SGLang on GPUs with the real model weights; the embedded sim stands in for it in the next block"},
	{prefix: "agentrace ingest --out ds --tokenizer", how: "run", dir: "repo",
		prep: "cp ../demo-out/traces.jsonl official.jsonl",
		stands: []standIn{
			{"official.jsonl", "official.jsonl", "the official dataset is not public: the demo's synthetic traces (copied to official.jsonl) stand in"},
			{"http://HOST:30000", "http://SIMADDR", "the embedded sim (agentrace sim on a free loopback port, answering from the demo's dataset) stands in for the GPU server"},
			{"--concurrency 1,2,4,8,16,32,64,128", "--concurrency 1,8", "two points instead of eight, to keep the test short"},
			{"--trajectories 613", "--trajectories 11", "the stand-in dataset's size (11) instead of the official 613"},
			{"--out sweep", "--out sweep --delay-scale 0.001", "the synthetic delays scaled by 1/1000, as the sim runs 1000x faster than modelled"},
			{"--out rep --tokenizer .cache/tokenizers/qwen3 sweep", "--out rep --tokenizer .cache/tokenizers/qwen3 sweep # exit 1",
				"two stand-in points on a tiny dataset are no official curve: report says FAIL and exits 1"},
		}},
	{prefix: "agentrace ingest --tokenizer .cache/tokenizers/qwen3 --out ds official.jsonl", how: "run", dir: "repo-submit",
		prep: "cp ../demo-out/traces.jsonl official.jsonl",
		stands: []standIn{
			{"official.jsonl", "official.jsonl", "the official dataset is not public: the demo's synthetic traces (copied to official.jsonl) stand in"},
			{"http://HOST:8000", "http://SIMADDR", "the embedded sim (agentrace sim on a free loopback port, answering from the demo's dataset) stands in for the vLLM endpoint"},
			{"--concurrency 1,2,4,8,16,32,64,128", "--concurrency 1,8", "two points instead of eight, to keep the test short"},
			{"--trajectories 613", "--trajectories 11", "the stand-in dataset's size (11) instead of the official 613"},
			{"--out sweep", "--out sweep --delay-scale 0.001", "the synthetic delays scaled by 1/1000, as the sim runs 1000x faster than modelled"},
		}},
	{prefix: "agentrace rescore --out results.parquet", how: "run", dir: "repo-archives",
		prep:   "tar czf sub.tgz -C testdata/submission-tree .",
		stands: []standIn{{"sub.tgz", "sub.tgz", "sub.tgz is testdata/submission-tree archived (tar czf sub.tgz -C testdata/submission-tree .)"}}},
	{prefix: "agentrace audit --tokenizer .cache/tokenizers/qwen3 --dataset testdata/refruns/dataset.jsonl testdata/refruns", how: "run", dir: "repo",
		prep: "tar czf acme.tar.gz -C testdata/refruns . && cp testdata/refruns/dataset.jsonl agentic_combined.jsonl",
		stands: []standIn{
			{"acme.tar.gz", "acme.tar.gz", "the reference client's genuine run folders (testdata/refruns) archived stand in for a submitter's archive"},
			{"agentic_combined.jsonl", "agentic_combined.jsonl", "their dataset (testdata/refruns/dataset.jsonl) stands in for the official one"},
			// "sweep" is the sweep the real-endpoint block made in the same folder.
		}},
}

// TestReadmeCommands runs the demo, then every command block of readmeFiles (the
// README, then the docs pages that carry its commands on) as written, in the
// folder the page runs it from, in a plain shell whose only change is the README's
// own line putting agentrace on PATH; any command whose exit status is not the one
// the page gives (0 unless a "# exit N" comment says otherwise; a pipeline
// included) fails the test. Blocks run from demo-out/ run on the demo's output; blocks run from the repository root
// run in a scratch folder laid out as one (testdata's fixtures copied, .cache linked to
// the tokenizer), with the stand-ins of readmePlans for what needs the official
// dataset or a GPU server. The pages' SQL blocks run with DuckDB in demo-out/, the
// subcommand synopsis is checked against each subcommand's --help, and the demo's
// printed table against the README's. A block that is neither run nor listed with a
// reason fails the test. The demo runs with two points (1 and 8) to keep the test
// short; its output has the layout `make demo` leaves.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo and the README's commands")
	}
	blocks := readmeBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("the README has no fenced block")
	}
	// Every block is planned, and every plan matches a block.
	plans := make([]*readmePlan, len(blocks))
	used := make([]int, len(readmePlans))
	for i, b := range blocks {
		if b.lang == "sql" {
			continue
		}
		key := b.key()
		if b.from != "" {
			key = "# from " + b.from + "/"
		}
		for j := range readmePlans {
			// A block saying "# from FOLDER/" is matched by that line, and one plan
			// may serve several such blocks; any other plan serves one block.
			if p := &readmePlans[j]; strings.HasPrefix(key, p.prefix) && (used[j] == 0 || b.from != "") {
				plans[i] = p
				used[j]++
				break
			}
		}
		if plans[i] == nil {
			t.Errorf("%s: a new block (%q) that this test neither runs nor lists with a reason: add it to readmePlans", b.where(), key)
		}
	}
	for j, n := range used {
		if n == 0 {
			t.Errorf("readmePlans[%d] (%q) matches no README block: the README changed, update the plan", j, readmePlans[j].prefix)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// root stands for the checkout after `make demo`: bin/agentrace built there (as
	// `make build` does), nothing put on PATH. Only the README's own PATH line
	// changes the environment the blocks run in.
	co := newCheckout(t)
	root, run := co.root, co.run
	bin := filepath.Join(root, "bin")
	if p, err := exec.LookPath("agentrace"); err == nil {
		t.Logf("note: an agentrace is already on this machine's PATH (%s); the README's PATH line puts the one built here first", p)
	}
	for i, b := range blocks {
		if plans[i] == nil || plans[i].how != "path" {
			continue
		}
		out, err := run(root, b.text+"\nprintf '%s' \"$PATH\"")
		if err != nil {
			t.Fatalf("%s, from the checkout: %v\n%s", b.where(), err, out)
		}
		co.env = append(os.Environ(), "PATH="+out)
		if where, err := run(root, "command -v agentrace"); err != nil || strings.TrimSpace(where) != filepath.Join(bin, "agentrace") {
			t.Fatalf("after %s, agentrace is %q (%v), want the one make built, %s", b.where(), strings.TrimSpace(where), err, filepath.Join(bin, "agentrace"))
		}
	}
	// The tokenizer is where `make tokenizers` puts it, before the demo, so the demo
	// counts with it as a user's does after `make tokenizers` (or `make test`).
	tokDir := testenv.Tokenizer(t) // skips, or fails under AGENTRACE_REQUIRE_DEPS
	if err := os.MkdirAll(filepath.Join(root, ".cache", "tokenizers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tokDir, filepath.Join(root, ".cache", "tokenizers", "qwen3")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// `make demo` runs ./bin/agentrace demo --out demo-out (checkMake checks it).
	demoOut, err := run(root, "./bin/agentrace demo --out demo-out --concurrency 1,8 --speedup 200")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, demoOut)
	}
	t.Logf("demo: %s", time.Since(start).Round(time.Millisecond))

	// The scratch folders laid out as the repository root, made on first use: the
	// fixtures the README names copied (never the repository's own, which the
	// commands would write beside), .cache/tokenizers/qwen3 linked to the tokenizer
	// (the parent of demo-out/ has it too, as after `make tokenizers && make demo`).
	repoRoot := testenv.RepoRoot(t)
	made := map[string]bool{}
	layout := func(t *testing.T, name string) string {
		dir := filepath.Join(root, name)
		if name == "demo-out" || made[name] {
			return dir
		}
		if out, err := run(root, fmt.Sprintf("mkdir -p %[1]s/testdata && cp -r %[2]s/testdata/refruns %[2]s/testdata/reference-run %[2]s/testdata/submission-tree %[2]s/testdata/submit %[1]s/testdata/",
			name, repoRoot)); err != nil {
			t.Fatalf("lay out %s: %v\n%s", name, err, out)
		}
		made[name] = true
		return dir
	}
	linkTokenizer := func(t *testing.T, dir string) {
		link := filepath.Join(dir, ".cache", "tokenizers", "qwen3")
		if _, err := os.Lstat(link); err == nil {
			return
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(tokDir, link); err != nil {
			t.Fatal(err)
		}
	}

	var simAddr string // the sim standing in for the GPU server, started on first use
	parent := t        // the sim lives until the whole test ends, not the first block using it
	startSim := func(t *testing.T) string {
		if simAddr != "" {
			return simAddr
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(filepath.Join(bin, "agentrace"), "sim", "--listen", addr, "--speedup", "1000",
			"--dataset", filepath.Join(root, "demo-out", "dataset"))
		var log strings.Builder
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		parent.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if resp, err := http.Get("http://" + addr + "/health"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sim on %s did not answer /health in 30 s:\n%s", addr, log.String())
			}
		}
		simAddr = addr
		return addr
	}

	var sqlRows map[string][]map[string]any // the SQL blocks' answers, run together
	written := map[string]string{}          // what the blocks run in the checkout wrote there: the block that wrote it
	for i, b := range blocks {
		p := plans[i]
		name := strings.TrimSuffix(filepath.Base(b.file), ".md") + fmt.Sprintf("_line%d", b.line)
		t.Run(name, func(t *testing.T) {
			switch {
			case b.lang == "sql":
				if sqlRows == nil {
					sqlRows = runSQL(t, filepath.Join(root, "demo-out"), blocks)
				}
				rows := sqlRows[b.where()]
				if len(rows) == 0 {
					t.Fatalf("%s: the query returns no row on the demo's output:\n%s", b.where(), b.text)
				}
				first := fmt.Sprint(rows[0])
				if len(first) > 200 {
					first = first[:200] + "..."
				}
				t.Logf("%s (%s): %d rows on the demo's output, first %s", b.where(), strings.SplitN(b.text, "\n", 2)[0], len(rows), first)
			case p.how == "path":
				t.Logf("%s: run first, from the checkout: agentrace is on PATH for every block", b.where())
				// the other way the README gives: make install
				out, err := exec.Command("make", "-C", repoRoot, "-n", "install").CombinedOutput()
				if err != nil || !strings.Contains(string(out), "install ./cmd/agentrace") {
					t.Errorf("make -n install: %v\n%s", err, out)
				}
			case p.how == "not run":
				t.Logf("%s (%q) not run: %s", b.where(), b.key(), p.reason)
			case p.how == "make":
				checkMake(t, repoRoot, b, p)
			case p.how == "demo-output":
				checkDemoOutput(t, b, demoOut)
			case p.how == "synopsis":
				checkSynopsis(t, run, root, b)
			case p.how == "run":
				if b.from != "" && b.from != p.dir {
					t.Fatalf("%s says it runs from %s/, the plan from %s", b.where(), b.from, p.dir)
				}
				dir := layout(t, p.dir)
				if strings.Contains(b.text, ".cache/tokenizers/") {
					if p.dir != "demo-out" {
						linkTokenizer(t, dir)
					}
					linkTokenizer(t, root) // demo-out/../.cache
				}
				if p.prep != "" {
					if out, err := run(dir, p.prep); err != nil {
						t.Fatalf("prepare the stand-ins: %s: %v\n%s", p.prep, err, out)
					}
				}
				cmds := b.commands()
				if len(cmds) == 0 {
					t.Fatalf("%s: a block with no command", b.where())
				}
				if p.dir != "demo-out" {
					before := topLevel(t, dir)
					defer func() {
						for name := range topLevel(t, dir) {
							if !before[name] {
								written[name] = b.where()
							}
						}
					}()
				}
				for _, s := range p.stands {
					hit := false
					for k, c := range cmds {
						if strings.Contains(c, s.from) {
							hit = true
							to := s.to
							if strings.Contains(to, "SIMADDR") {
								to = strings.ReplaceAll(to, "SIMADDR", startSim(t))
							}
							cmds[k] = strings.ReplaceAll(c, s.from, to)
						}
					}
					if !hit {
						t.Fatalf("%s: the stand-in for %q matches no command: the README changed, update readmePlans", b.where(), s.from)
					}
					t.Logf("stand-in: %s", s.why)
				}
				runCommands(t, run, dir, p.dir, b, cmds)
			}
		})
	}
	checkREADMEOutputs(t, repoRoot, written)
	t.Logf("all of the README in %s", time.Since(start).Round(time.Millisecond))
}

// runCommands runs a block's commands one by one in dir (named from in
// messages): each must exit with the status its "# exit N" comment gives (0
// without one) and show what checkOutput asks of it.
func runCommands(t *testing.T, run func(dir, script string) (string, error), dir, from string, b readmeBlock, cmds []string) {
	t.Helper()
	for _, c := range cmds {
		t0 := time.Now()
		want := 0 // the exit status a "# exit N" comment announces
		if m := exitComment.FindStringSubmatch(c); m != nil {
			fmt.Sscan(m[1], &want)
		}
		out, err := run(dir, c)
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else if err != nil {
			got = -1
		}
		if got != want {
			t.Errorf("%s, from %s/: %s\nexit status %d (%v), the README says %d\n%s", b.where(), from, c, got, err, want, out)
			continue
		}
		t.Logf("from %s/: %s: ok in %s (%d bytes of output)", from, c, time.Since(t0).Round(time.Millisecond), len(out))
		checkOutput(t, c, out)
	}
}

// TestReadmeAfterDemoWithoutTokenizer runs the README's "After the demo" blocks
// (those of README.md run from demo-out/) on a demo made without the stand-in
// tokenizer, as after `make demo` alone, then again once the tokenizer is where
// `make tokenizers` puts it, as after `make demo` then `make test`: each command
// exits as its comment says, and audit passes, with no number that disagrees
// only because it was counted another way (the runs record the server's usage
// counts, and every command counts so). TestReadmeCommands runs them on a demo
// made with the tokenizer. The demo-out/ blocks of the docs pages are not run
// here: the dataset card's names the tokenizer on purpose (a dataset records
// none to default to), and the SQL blocks need the earlier pages' outputs.
func TestReadmeAfterDemoWithoutTokenizer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo and the README's commands")
	}
	var blocks []readmeBlock
	for _, b := range fileBlocks(t, "README.md") {
		if b.from == "demo-out" && b.lang == "sh" {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no block run from demo-out/")
	}
	var pathBlock *readmeBlock
	for _, b := range fileBlocks(t, "README.md") {
		if strings.HasPrefix(b.key(), `export PATH="$PWD/bin:$PATH"`) {
			pathBlock = &b
			break
		}
	}
	if pathBlock == nil {
		t.Fatal("README.md has no line putting agentrace on PATH")
	}
	co := newCheckout(t)
	root, run := co.root, co.run
	out, err := run(root, pathBlock.text+"\nprintf '%s' \"$PATH\"")
	if err != nil {
		t.Fatalf("%s: %v\n%s", pathBlock.where(), err, out)
	}
	co.env = append(os.Environ(), "PATH="+out)
	// No .cache/ beside demo-out/: the demo counts with the server's usage.
	demoOut, err := run(root, "./bin/agentrace demo --out demo-out --concurrency 1,8 --speedup 200")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, demoOut)
	}
	if !strings.Contains(demoOut, "OSL counted with the server's usage counts") {
		t.Fatalf("the demo without a tokenizer does not say it counted with the server's usage:\n%s", demoOut)
	}
	dir := filepath.Join(root, "demo-out")
	demoMade := topLevel(t, dir)
	runAll := func(t *testing.T) {
		// what an earlier pass wrote beside the demo's output goes first
		for name := range topLevel(t, dir) {
			if !demoMade[name] {
				if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, b := range blocks {
			runCommands(t, run, dir, "demo-out", b, b.commands())
		}
	}
	t.Run("make_demo_alone", runAll)
	t.Run("then_make_test", func(t *testing.T) {
		tokDir := testenv.Tokenizer(t) // skips, or fails under AGENTRACE_REQUIRE_DEPS
		if err := os.MkdirAll(filepath.Join(root, ".cache", "tokenizers"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(tokDir, filepath.Join(root, ".cache", "tokenizers", "qwen3")); err != nil {
			t.Fatal(err)
		}
		runAll(t)
		// Asked for the tokenizer the runs were not counted with, audit says so once
		// per reason and finds nothing that disagrees.
		out, err := run(dir, "agentrace audit --tokenizer ../.cache/tokenizers/qwen3 runs")
		if err != nil {
			t.Fatalf("audit with another tokenizer: %v\n%s", err, out)
		}
		for _, want := range []string{schemas.NotComparableLabel, " 0 disagree", "audit passed"} {
			if !strings.Contains(out, want) {
				t.Errorf("audit with another tokenizer: output lacks %q:\n%s", want, out)
			}
		}
	})
}

// checkout is a temporary root standing for a checkout after `make build`:
// bin/agentrace built there, nothing put on PATH until a test sets env's.
type checkout struct {
	root string
	env  []string // the scripts' environment: this process's at first
}

func newCheckout(t *testing.T) *checkout {
	t.Helper()
	root := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(root, "bin", "agentrace"), "./cmd/agentrace")
	build.Dir = testenv.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return &checkout{root: root, env: os.Environ()}
}

// run runs script with bash -euo pipefail in dir, under c.env, for at most 5
// minutes, and returns its combined output.
func (c *checkout) run(dir, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// topLevel returns the names in dir, a folder's with a trailing slash.
func topLevel(t *testing.T, dir string) map[string]bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			name += "/" // as .gitignore names a folder
		}
		names[name] = true
	}
	return names
}

// checkREADMEOutputs: what the README's commands write in the checkout is
// git-ignored, and `make clean` removes it (but a real endpoint's dataset and sweep,
// ds/ and sweep/: ignored, kept).
func checkREADMEOutputs(t *testing.T, repo string, written map[string]string) {
	clean, err := exec.Command("make", "-C", repo, "-n", "clean").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n clean: %v\n%s", err, clean)
	}
	removed := map[string]bool{}
	for _, f := range strings.Fields(string(clean)) {
		removed[f] = true
	}
	for name, where := range written {
		ignore := exec.Command("git", "-C", repo, "check-ignore", "-q", "--no-index", name)
		if err := ignore.Run(); err != nil {
			t.Errorf("%s writes %s in the checkout, which .gitignore does not ignore", where, name)
		}
		if base := strings.TrimSuffix(name, "/"); !removed[base] && base != "ds" && base != "sweep" {
			t.Errorf("%s writes %s in the checkout, which make clean does not remove", where, name)
		}
	}
	t.Logf("the README's commands wrote in the checkout, ignored and cleaned: %v", written)
}

// exitComment is a README command's "# exit N": the exit status it ends with.
var exitComment = regexp.MustCompile(`#\s*exit (\d+)\b`)

// checkOutput asserts what a README command must show beyond its exit status.
func checkOutput(t *testing.T, cmd, out string) {
	t.Helper()
	want := ""
	switch {
	case strings.HasPrefix(cmd, "agentrace rescore") && strings.Contains(cmd, "every point judged and passing"):
		want = " 0 fail, 0 not judged (a gate not evaluated), 0 could not be scored"
	case strings.HasPrefix(cmd, "agentrace rescore"):
		want = " 0 could not be scored"
	case strings.HasPrefix(cmd, "agentrace score") && strings.Contains(cmd, "verdict PASS"):
		want = "verdict                              PASS"
	case strings.HasPrefix(cmd, "agentrace score"):
		want = "inline accuracy"
	case strings.HasPrefix(cmd, "agentrace audit"):
		want = "audit passed"
	case strings.HasPrefix(cmd, "agentrace report"):
		want = "report.html"
	case strings.HasPrefix(cmd, "agentrace sweep"):
		want = "trajectories finished"
	}
	if want != "" && !strings.Contains(out, want) {
		t.Errorf("%s: output lacks %q:\n%s", cmd, want, out)
	}
}

// runSQL runs the README's ```sql blocks with DuckDB (the pinned @duckdb/node-api),
// all in one process, in demo-out/, after the commands of "After the demo" wrote the
// files they read, and returns each block's rows by its line.
func runSQL(t *testing.T, dir string, blocks []readmeBlock) map[string][]map[string]any {
	queries := map[string]string{}
	for _, b := range blocks {
		if b.lang == "sql" {
			queries[b.where()] = b.text
		}
	}
	res := testenv.DuckDB(t, dir, queries)
	rows := map[string][]map[string]any{}
	for _, b := range blocks {
		if b.lang == "sql" {
			rows[b.where()] = res[b.where()]
		}
	}
	return rows
}

// checkMake checks that the README's make targets exist and that `make demo` runs
// the demo this test runs (with more points).
func checkMake(t *testing.T, repo string, b readmeBlock, p *readmePlan) {
	t.Logf("%s not run as written: %s", b.where(), p.reason)
	for _, c := range b.commands() {
		target := strings.Fields(c)[1]
		cmd := exec.Command("make", "-n", target)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("make -n %s: %v\n%s", target, err, out)
			continue
		}
		if target == "demo" && !regexp.MustCompile(`agentrace demo --out demo-out\b`).Match(out) {
			t.Errorf("make -n demo does not run `agentrace demo --out demo-out`:\n%s", out)
		}
	}
}

// checkDemoOutput checks that the demo printed the README's sample table's layout:
// the same header and the same kinds of lines (the figures differ).
func checkDemoOutput(t *testing.T, b readmeBlock, demoOut string) {
	lines := strings.Split(b.text, "\n")
	for _, prefix := range []string{"ruleset checker-2026-10-qwen3.6; OSL counted with ", "the simulated server ran ", "report verdict: ",
		"  (a demo is never official", "demo finished in ", "report: demo-out/report/report.html"} {
		inReadme := false
		for _, l := range lines {
			inReadme = inReadme || strings.HasPrefix(l, prefix)
		}
		if !inReadme {
			t.Errorf("%s: the sample demo output has no line starting %q", b.where(), prefix)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix)).MatchString(demoOut) {
			t.Errorf("the demo printed no line starting %q:\n%s", prefix, demoOut)
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "concurrency  system tokens/s") && !strings.Contains(demoOut, l+"\n") {
			t.Errorf("the demo's table header differs from the README's %q:\n%s", l, demoOut)
		}
	}
}

// checkSynopsis checks each line of the subcommand list: the subcommand exists and
// its --help lists every --flag the line shows. The --help runs go four at a time.
func checkSynopsis(t *testing.T, run func(dir, script string) (string, error), dir string, b readmeBlock) {
	flag := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	n := 0
	for _, l := range strings.Split(b.text, "\n") {
		l = strings.SplitN(l, "#", 2)[0]
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "agentrace" {
			continue
		}
		sub := f[1]
		if len(f) > 2 && (sub == "log" || sub == "rulesets") && regexp.MustCompile(`^[a-z]+$`).MatchString(f[2]) {
			sub += " " + f[2] // log dump, log export, rulesets derive
		}
		n++
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			help, err := run(dir, "agentrace "+sub+" --help")
			if err != nil {
				t.Errorf("%s: agentrace %s --help: %v\n%s", b.where(), sub, err, help)
				return
			}
			for _, fl := range flag.FindAllString(l, -1) {
				if !regexp.MustCompile(regexp.QuoteMeta(fl) + `\b`).MatchString(help) {
					t.Errorf("README.md synopsis: agentrace %s shows %s, which its --help does not list", sub, fl)
				}
			}
		}()
	}
	wg.Wait()
	if n == 0 {
		t.Errorf("%s: the synopsis has no agentrace line", b.where())
	}
	t.Logf("synopsis: %d lines checked against their --help", n)
}
