package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/replay/refconfig"
	"github.com/urfave/cli/v3"
)

// samplingFlagDefs are the sampling parameters of the reference's model_params
// as flags: every request carries them (a row's own value wins), over the
// --profile's and a --config's.
func samplingFlagDefs() []cli.Flag {
	return []cli.Flag{
		&cli.FloatFlag{Name: "temperature", HideDefault: true, Usage: "sampling temperature sent with every request (model_params.temperature; sent as a float, 0 as 0.0)"},
		&cli.FloatFlag{Name: "top-p", HideDefault: true, Usage: "top_p sent with every request"},
		&cli.IntFlag{Name: "top-k", HideDefault: true, Usage: "top_k sent with every request"},
		&cli.StringFlag{Name: "sampling-seed", Usage: "seed sent with every request (model_params.seed; named so because --seed seeds agentrace's own draws elsewhere)"},
		&cli.FloatFlag{Name: "repetition-penalty", HideDefault: true, Usage: "repetition_penalty sent with every request"},
		&cli.FloatFlag{Name: "presence-penalty", HideDefault: true, Usage: "presence_penalty sent with every request"},
		&cli.FloatFlag{Name: "frequency-penalty", HideDefault: true, Usage: "frequency_penalty sent with every request"},
		&cli.StringFlag{Name: "chat-template-kwargs", Usage: `chat_template_kwargs sent with every request, a JSON object, e.g. '{"preserve_thinking":true}' (keys kept in the order given)`},
	}
}

// samplingFlags reads the sampling flags that were given.
func samplingFlags(c *cli.Command) (datasets.Profile, error) {
	var p datasets.Profile
	fl := func(name string) *float64 {
		if !c.IsSet(name) {
			return nil
		}
		v := c.Float(name)
		return &v
	}
	p.Temperature, p.TopP = fl("temperature"), fl("top-p")
	p.RepetitionPenalty, p.PresencePenalty, p.FrequencyPenalty = fl("repetition-penalty"), fl("presence-penalty"), fl("frequency-penalty")
	if c.IsSet("top-k") {
		v := int(c.Int("top-k"))
		p.TopK = &v
	}
	if s := c.String("sampling-seed"); s != "" {
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			if _, err := strconv.ParseUint(s, 10, 64); err != nil {
				return p, fmt.Errorf("--sampling-seed %q: want an integer from -2^63 to 2^64-1 (what the reference's encoder sends)", s)
			}
		}
		p.Seed = json.Number(s)
	}
	if s := c.String("chat-template-kwargs"); s != "" {
		var kw map[string]any
		if err := json.Unmarshal([]byte(s), &kw); err != nil || kw == nil {
			return p, fmt.Errorf("--chat-template-kwargs %q: want a JSON object", s)
		}
		p.ChatTemplateKwargs = kw
		p.ChatTemplateKwargsJSON = string(jsontext.AppendCompact(nil, []byte(s)))
	}
	return p, nil
}

// configFlags are --config and --mode.
func configFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", TakesFile: true, Usage: "the reference client's benchmark YAML (its schema, ${VAR} expanded; flags given here win over it; see docs/config.md)"},
		&cli.StringFlag{Name: "mode", Value: "perf", Usage: "with --config: perf runs the performance dataset, acc the config's swe_bench_scorer accuracy dataset (as agentrace swebench, into OUT/swebench), both one then the other"},
		&cli.StringFlag{Name: "instances", TakesFile: true, Usage: "--mode acc|both: the SWE-bench split (Parquet or JSONL with instance_id, or the reference's datasets folder)"},
		&cli.StringFlag{Name: "swebench-token-env", Usage: "--mode acc|both: environment variable holding the SWE-bench service's token (instead of the config's swebench_service_auth_token)"},
	}
}

// loadConfig reads --config into replay options; nil without --config.
func loadConfig(ctx context.Context, c *cli.Command) (*replay.ConfigRun, error) {
	f := c.String("config")
	if f == "" {
		return nil, nil
	}
	cfg, err := refconfig.Load(ctx, f)
	if err != nil {
		return nil, err
	}
	cr, err := replay.FromConfig(cfg, f)
	if err != nil {
		return nil, err
	}
	cr.Options.ConfigFile = f
	return cr, nil
}

// datasetDir returns a dataset folder for path: path itself when it is one; a
// trace file (the reference's JSONL) is ingested first into the user's cache,
// keyed by its content, and reused from there. A trace file is opened as every
// input is (internal/infile: a regular file, never blocking on a FIFO) and
// hashed under ctx.
func datasetDir(ctx context.Context, path string, log io.Writer) (dir, source string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", fmt.Errorf("dataset: %w", err)
	}
	if st.IsDir() {
		return path, "", nil
	}
	f, err := infile.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("dataset: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(h, infile.Reader(ctx, f))
	f.Close()
	if err != nil {
		return "", "", fmt.Errorf("dataset: read %q: %w", path, err)
	}
	cache := os.Getenv("AGENTRACE_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", "", fmt.Errorf("dataset %q is a trace file and there is no cache folder to ingest it into (set AGENTRACE_CACHE): %w", path, err)
		}
		cache = filepath.Join(base, "agentrace")
	}
	dir = filepath.Join(cache, "datasets", hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := datasets.Open(ctx, dir); err == nil {
		fmt.Fprintf(log, "agentrace: dataset %s: the trace file's dataset from the cache, %s\n", path, dir)
		return dir, path, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", "", fmt.Errorf("dataset: %w", err)
	}
	fmt.Fprintf(log, "agentrace: dataset %s: ingesting the trace file into %s\n", path, dir)
	if _, err := ingest.Run(ctx, ingest.Options{Out: dir, Inputs: []string{path}, Overwrite: true}); err != nil {
		return "", "", err
	}
	return dir, path, nil
}
