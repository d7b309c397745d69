package chaos

import (
	"path/filepath"
	"time"
)

const (
	small  = 256 << 20 // budget of a command on a small input
	minute = time.Minute
)

// dataset writes synthetic traces (both domains, a few hundred client turns)
// and ingests them: the traces file and the dataset folder, under root.
func (h *harness) dataset(root string) (traces, ds string) {
	h.t.Helper()
	traces, ds = filepath.Join(root, "traces.jsonl"), filepath.Join(root, "ds")
	h.run(spec{budget: small}, minute, "agentrace", "synth", "--scale", "0.02", "--seed", "3", "--out", traces).expectExit(0)
	h.run(spec{budget: small}, minute, "agentrace", "ingest", "--out", ds, traces).expectExit(0)
	return traces, ds
}

// workflowDataset writes synthetic workflow traces at scale (seed 5) and ingests
// them: the dataset folder, root/wf.
func (h *harness) workflowDataset(root, scale string) string {
	h.t.Helper()
	traces, ds := filepath.Join(root, "wf.jsonl"), filepath.Join(root, "wf")
	h.run(spec{budget: small}, minute, "agentrace", "synth", "--domain", "workflow", "--scale", scale, "--seed", "5", "--out", traces).expectExit(0)
	h.run(spec{budget: small}, minute, "agentrace", "ingest", "--out", ds, traces).expectExit(0)
	return ds
}

// sim starts `agentrace sim` on a free loopback port and returns its endpoint.
func (h *harness) sim(budget int64, args ...string) (*proc, string) {
	h.t.Helper()
	p := h.start(spec{budget: budget}, append([]string{"agentrace", "sim", "--listen", "127.0.0.1:0"}, args...)...)
	m := p.waitFor(`on (http://[0-9.:]+)/v1`, 30*time.Second)
	return p, m[1]
}

// longRun writes the workflow dataset at scale 0.5 (root/wf) and starts a sim
// (stop it) over which a replay lasts long enough to be killed or read mid-run:
// at speedup 10 a replay at concurrency 16 lasts about 11 s on an idle machine,
// long past a kill at 2 to 3 s, and a second's batch of rows (about 200) stays
// well under 512 KB. At 20000 an idle machine finished the whole run in 1.7 s,
// before the kill, with its first batch alone over 512 KB. replay is the argv of
// such a replay into the run folder out.
func (h *harness) longRun(root string) (sim *proc, replay func(out string) []string) {
	h.t.Helper()
	ds := h.workflowDataset(root, "0.5")
	sim, endpoint := h.sim(small, "--speedup", "10", "--output-mean", "64")
	return sim, func(out string) []string {
		return []string{"agentrace", "replay", "--dataset", ds, "--endpoint", endpoint, "--concurrency", "16", "--no-delays", "--out", out}
	}
}
