package score

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentrace/agentrace/datasets/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// Kinds of run directory.
const (
	KindAgentrace = "agentrace" // a replay run: turns.arrows and manifest.json
	KindReference = "reference" // the reference client's report dir: events.jsonl
)

// Files the reference client writes into its report directory besides events.jsonl.
const (
	ReferenceConfigFile  = "config.yaml"
	ReferenceSummaryFile = "result_summary.json"
)

// RunKind tells which kind of run dir is, "" when neither.
func RunKind(dir string) string {
	if fileExists(filepath.Join(dir, schemas.TurnLogFile)) {
		return KindAgentrace
	}
	if fileExists(filepath.Join(dir, EventsFile)) {
		return KindReference
	}
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// RunInfo is what a run directory says about itself.
type RunInfo struct {
	Kind        string
	Model       string
	Concurrency int
	// Dataset is the dataset the run names (its manifest's config.dataset, or the
	// reference config's performance dataset path), resolved against the run
	// directory when relative and found there; "" when it names none.
	Dataset string
	// DatasetHash is the content hash of the dataset the run was replayed from
	// (agentrace runs only).
	DatasetHash string
	// State is the manifest's run state (agentrace runs only).
	State string
}

// ReadRunInfo reads a run directory's manifest (agentrace) or config.yaml
// (reference). A reference run without config.yaml gives only its kind.
func ReadRunInfo(dir string) (RunInfo, error) {
	info := RunInfo{Kind: RunKind(dir)}
	switch info.Kind {
	case KindAgentrace:
		m, err := runlog.ReadManifest(dir)
		if err != nil {
			return info, err
		}
		info.Model, info.Concurrency = m.Config.Model, m.Config.Concurrency
		info.Dataset, info.DatasetHash, info.State = runlog.DatasetDir(dir, m.Config), m.DatasetHash, m.State
	case KindReference:
		cfg, err := readReferenceConfig(filepath.Join(dir, ReferenceConfigFile))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return info, err
		}
		info.Model, info.Concurrency, info.Dataset = cfg.model, cfg.concurrency, resolveNear(dir, cfg.dataset)
	default:
		return info, fmt.Errorf("read run %q: no %s or %s in it", dir, schemas.TurnLogFile, EventsFile)
	}
	return info, nil
}

// resolveNear returns p as is when absolute or present relative to the working
// directory, else joined to dir when present there, else as given.
func resolveNear(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if q := filepath.Join(dir, p); pathExists(q) {
		return q
	}
	return p
}

func pathExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// referenceConfig is what scoring reads from the reference's config.yaml.
type referenceConfig struct {
	model       string
	dataset     string
	concurrency int
}

// readReferenceConfig reads three keys of the reference's config.yaml without a
// YAML library: model_params.name, the path of the first dataset whose type is
// performance (else the first dataset's path), and
// settings.load_pattern.target_concurrency. The file is the reference's own
// block-style output; flow style and anchors are not read.
func readReferenceConfig(path string) (referenceConfig, error) {
	var cfg referenceConfig
	f, err := os.Open(path)
	if err != nil {
		return cfg, fmt.Errorf("read reference config: %w", err)
	}
	defer f.Close()
	type frame struct {
		indent int
		key    string
	}
	var stack []frame
	var firstPath, perfPath string
	itemPath, itemType := "", ""
	inDatasets := false
	flushItem := func() {
		if itemPath != "" && firstPath == "" {
			firstPath = itemPath
		}
		if itemPath != "" && itemType == "performance" && perfPath == "" {
			perfPath = itemPath
		}
		itemPath, itemType = "", ""
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		item := strings.HasPrefix(trimmed, "- ")
		if item {
			trimmed = strings.TrimSpace(trimmed[2:])
			indent += 2
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent && !(item && stack[len(stack)-1].key == "datasets") {
			stack = stack[:len(stack)-1]
		}
		key, val, ok := strings.Cut(trimmed, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), yamlScalar(val)
		parent := ""
		if len(stack) > 0 {
			parent = stack[len(stack)-1].key
		}
		grand := ""
		if len(stack) > 1 {
			grand = stack[len(stack)-2].key
		}
		if len(stack) == 0 {
			if inDatasets {
				flushItem()
			}
			inDatasets = key == "datasets"
		}
		if inDatasets && parent == "datasets" {
			if item {
				flushItem()
			}
			switch key {
			case "path":
				itemPath = val
			case "type":
				itemType = val
			}
		}
		switch {
		case key == "name" && parent == "model_params":
			cfg.model = val
		case key == "target_concurrency" && parent == "load_pattern" && grand == "settings":
			if n, err := strconv.Atoi(val); err == nil {
				cfg.concurrency = n
			}
		}
		if val == "" {
			stack = append(stack, frame{indent, key})
		}
	}
	if err := sc.Err(); err != nil {
		return cfg, fmt.Errorf("read reference config %q: %w", path, err)
	}
	flushItem()
	cfg.dataset = perfPath
	if cfg.dataset == "" {
		cfg.dataset = firstPath
	}
	return cfg, nil
}

// yamlScalar unquotes a plain or quoted YAML scalar.
func yamlScalar(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"') {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	return s
}

// runData is a run reduced to what scoring needs.
type runData struct {
	attempts []Attempt
	// completed are the completed responses, rebuilt only when a tokenizer counts
	// them (agentrace runs) or as read (reference runs).
	completed []schemas.Response
	// usage is the server's completion token count of each completed response, -1
	// when unknown (reference runs have none); its length is the number of
	// completed responses.
	usage []int32
	// rawCalls holds, for agentrace runs, each completed response's tool calls as
	// logged (JSON), decoded only when a tokenizer needs them.
	rawCalls []string
	warnings []string
	// release frees what the outputs point into; nil when nothing.
	release func()
}

// response returns completed response i, its tool calls decoded.
func (rd *runData) response(i int) (schemas.Response, error) {
	r := rd.completed[i]
	if rd.rawCalls != nil && rd.rawCalls[i] != "" {
		if err := json.Unmarshal([]byte(rd.rawCalls[i]), &r.ToolCalls); err != nil {
			return r, fmt.Errorf("output_tool_calls: %w", err)
		}
	}
	return r, nil
}

// readAgentraceRun reads turns.arrows. A truncated log (a crashed run) is scored
// on its complete batches, with a warning. pool, when not nil, recycles the Arrow
// buffers across runs. The outputs point into the log's buffers until
// rd.release is called, unless clone is set (a tokenizer may keep pieces of them).
func readAgentraceRun(dir string, truth *Truth, pool *bufferPool, clone bool) (*runData, error) {
	recs, release, err := readTurnLog(dir, pool, clone)
	rd := &runData{release: release}
	if err != nil {
		if !errors.Is(err, runlog.ErrTruncated) {
			return nil, err
		}
		rd.warnings = append(rd.warnings, fmt.Sprintf("turn log truncated, scored its %d complete rows: %v", len(recs), err))
	}
	rd.attempts = make([]Attempt, 0, len(recs))
	ok := 0
	for i := range recs {
		if recs[i].status == schemas.StatusOK {
			ok++
		}
	}
	outs := make([]Output, 0, ok)
	rd.usage = make([]int32, 0, ok)
	if clone { // responses are rebuilt only for a tokenizer
		rd.completed = make([]schemas.Response, 0, ok)
		rd.rawCalls = make([]string, 0, ok)
	}
	for i := range recs {
		r := &recs[i]
		a := Attempt{SessionID: r.session, ConversationID: r.conv, Repeat: int(r.repeat),
			Turn: r.turn, InWindow: r.inWindow, OSL: -1}
		if a.ConversationID == "" {
			var ok bool
			a.ConversationID, a.Repeat, ok = ParseReferenceSessionID(r.session)
			if !ok {
				release()
				return nil, fmt.Errorf("run %q: turn log row %d: bad session id %q", dir, i, r.session)
			}
		}
		if a.Repeat <= 0 {
			a.Repeat = 1
		}
		if r.status == schemas.StatusOK {
			outs = append(outs, Output{Content: r.content, Reasoning: r.reasoning})
			out := &outs[len(outs)-1]
			if r.calls != "" {
				// Read-only view of the logged JSON, without a copy.
				out.ToolCalls = unsafe.Slice(unsafe.StringData(r.calls), len(r.calls))
			}
			if clone {
				rd.completed = append(rd.completed, schemas.Response{Content: r.content, Reasoning: r.reasoning})
				rd.rawCalls = append(rd.rawCalls, r.calls)
			}
			rd.usage = append(rd.usage, r.usage)
			out.completed = len(rd.usage)
			a.Output = out
		}
		rd.attempts = append(rd.attempts, a)
	}
	return rd, nil
}

// readReferenceRun reads events.jsonl.
func readReferenceRun(dir string, truth *Truth) (*runData, error) {
	ref, err := ReadReferenceEvents(filepath.Join(dir, EventsFile), truth)
	if err != nil {
		return nil, err
	}
	rd := &runData{attempts: ref.Attempts, completed: ref.Completed}
	rd.usage = make([]int32, len(ref.Completed))
	for i := range rd.usage {
		rd.usage[i] = -1
	}
	if ref.Skipped > 0 {
		rd.warnings = append(rd.warnings, fmt.Sprintf("%s: skipped %d malformed lines, as the reference does (first: %s)",
			EventsFile, ref.Skipped, ref.FirstSkipped))
	}
	return rd, nil
}

// referenceSummaryOSL reads the reference's full-run OSL mean from its
// result_summary.json (performance/ or the run folder itself), if it has one.
func referenceSummaryOSL(dir string) (mean float64, total int64, n int, ok bool) {
	for _, p := range []string{filepath.Join(dir, "performance", ReferenceSummaryFile), filepath.Join(dir, ReferenceSummaryFile)} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var s struct {
			Full *struct {
				Total *float64 `json:"total"`
				Avg   *float64 `json:"avg"`
			} `json:"output_sequence_lengths_full_run"`
			Completed *int `json:"n_samples_completed"`
		}
		if json.Unmarshal(bytes.TrimSpace(data), &s) != nil || s.Full == nil || s.Full.Avg == nil {
			continue
		}
		if s.Full.Total != nil {
			total = int64(*s.Full.Total)
		}
		if s.Completed != nil {
			n = *s.Completed
		}
		return *s.Full.Avg, total, n, true
	}
	return 0, 0, 0, false
}
