package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/replay/refconfig"
	"github.com/agentrace/agentrace/replay/swebench"
	"github.com/agentrace/agentrace/score"
	"github.com/urfave/cli/v3"
)

func swebenchCommand() *cli.Command {
	return &cli.Command{
		Name:      "swebench",
		Usage:     "run the SWE-bench accuracy tier through the reference's SWE-bench service",
		UsageText: "agentrace swebench --service URL [--auth-token-env NAME] --endpoint URL --model NAME --instances FILE --out DIR [options]",
		Description: "Submits the first --num-instances SWE-bench instances (in file order) to the reference's SWE-bench\n" +
			"service (POST /v1/runs), whose agents solve them against --endpoint and whose harness grades them;\n" +
			"follows the run (GET /v1/runs/ID every --poll-interval) printing its phase and agent/eval counts;\n" +
			"cancels it (POST /v1/runs/ID/cancel) on Ctrl-C or at --timeout; downloads its artifacts into\n" +
			"DIR/swe_bench_runs/ID/ with the last status, writes DIR/swe_bench_results.json and DIR/swebench.json,\n" +
			"and prints resolved / evaluated as the reference's swe_bench_scorer computes it (the counters must\n" +
			"satisfy resolved <= submitted <= evaluated and submitted > 0; submitted < evaluated is incomplete).\n" +
			"`agentrace score --swebench DIR RUNDIR` judges a run with the result.\n\n" +
			"--instances is a Parquet or JSON Lines file with instance_id (the Hugging Face rows of\n" +
			"princeton-nlp/SWE-bench_Verified, split test), or the reference's datasets folder holding its cached\n" +
			"swe_bench/<subset>/<split>/swe_bench_<subset>_<split>.parquet. The benchmark's instances are the first\n" +
			"200 of princeton-nlp/SWE-bench_Verified at revision " + swebench.OfficialRevision[:12] + " (their list's sha256 is\n" +
			"pinned): another list is said to be unofficial, and refused with --official. The service's token is\n" +
			"read from the environment variable --auth-token-env, never from a flag, and written nowhere, nor\n" +
			"anything the service echoes of it. Artifacts are downloaded under --max-artifact-bytes each and\n" +
			"--max-artifacts-bytes in all; one that is not downloaded makes the exit status 3.\n\n" +
			"Example:\n" +
			"  SWEBENCH_TOKEN=... agentrace swebench --service http://localhost:18080 --auth-token-env SWEBENCH_TOKEN \\\n" +
			"      --endpoint http://localhost:30000 --model Qwen/Qwen3.6-35B-A3B --profile qwen3.6-35b-a3b \\\n" +
			"      --instances swe_bench_verified_test.parquet --template qwen_tools --out swebench-out",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "service", Usage: "the SWE-bench service's root URL", Required: true},
			&cli.StringFlag{Name: "auth-token-env", Usage: "environment variable holding the service's bearer token"},
			&cli.StringFlag{Name: "endpoint", Usage: "the model endpoint the service's agents call (one URL)", Required: true},
			&cli.StringFlag{Name: "model", Usage: "model name the agents send"},
			&cli.StringFlag{Name: "profile", Usage: "sampling profile whose settings become generation_params (qwen3.6-35b-a3b, kimi-k3, kimi-k2.6)"},
			&cli.IntFlag{Name: "max-tokens", HideDefault: true, Usage: "max_new_tokens of generation_params (default: the profile's, else 1024)"},
			&cli.StringFlag{Name: "instances", Usage: "SWE-bench split: Parquet or JSONL with instance_id, or the reference's datasets folder", Required: true, TakesFile: true},
			&cli.IntFlag{Name: "num-instances", Value: swebench.DefaultNumInstances, Usage: "evaluate the first N instances"},
			&cli.StringFlag{Name: "template", Value: swebench.DefaultTemplate, Usage: "agent template: default or qwen_tools"},
			&cli.IntFlag{Name: "workers", Value: swebench.DefaultWorkers, Usage: "agent workers of the service"},
			&cli.IntFlag{Name: "max-eval-workers", Value: swebench.DefaultMaxEvalWorkers, Usage: "evaluation workers of the service"},
			&cli.StringFlag{Name: "subset", Value: swebench.DefaultSubset, Usage: "verified or lite"},
			&cli.StringFlag{Name: "split", Value: swebench.DefaultSplit, Usage: "dataset split"},
			&cli.DurationFlag{Name: "timeout", Value: swebench.DefaultTimeout, Usage: "cancel the service run after this long"},
			&cli.DurationFlag{Name: "poll-interval", Value: swebench.DefaultPollInterval, Usage: "time between status polls"},
			&cli.StringSliceFlag{Name: "routing-header", Value: []string{swebench.DefaultRoutingHeader}, Usage: "header the service's agents set to their trajectory's session id (repeatable; routing_headers)"},
			&cli.Int64Flag{Name: "max-artifact-bytes", Value: swebench.DefaultMaxArtifactBytes, Usage: "download no artifact larger than this"},
			&cli.Int64Flag{Name: "max-artifacts-bytes", Value: swebench.DefaultMaxArtifactsBytes, Usage: "download no more than this of all artifacts together"},
			&cli.BoolFlag{Name: "official", Usage: "refuse an instance list other than the benchmark's pinned one"},
			&cli.StringFlag{Name: "api-key-env", Usage: "environment variable holding the endpoint's API key, which the service's agents send to --endpoint (endpoint_api_key; never written anywhere)"},
			outFlag("folder to write: swe_bench_results.json, swebench.json, swe_bench_runs/ID/"),
		}, append(overwriteFlags("a swebench folder"), samplingFlagDefs()...)...),
		Action: func(ctx context.Context, c *cli.Command) error {
			sampling, err := samplingFlags(c)
			if err != nil {
				return err
			}
			o := swebench.Options{
				Service: c.String("service"), AuthTokenEnv: c.String("auth-token-env"), Endpoint: c.String("endpoint"),
				EndpointAPIKeyEnv: c.String("api-key-env"),
				Model:             c.String("model"), Template: c.String("template"), Workers: int(c.Int("workers")),
				MaxEvalWorkers: int(c.Int("max-eval-workers")), Subset: c.String("subset"), Split: c.String("split"),
				Out: c.String("out"), Overwrite: overwrite(c), Timeout: c.Duration("timeout"), PollInterval: c.Duration("poll-interval"),
				RoutingHeaders: c.StringSlice("routing-header"), MaxArtifactBytes: c.Int64("max-artifact-bytes"),
				MaxArtifactsBytes: c.Int64("max-artifacts-bytes"), Events: prefixed(c, "swebench"),
			}
			if o.MaxArtifactBytes < 1 || o.MaxArtifactsBytes < 1 {
				return argsError("swebench", "--max-artifact-bytes %d, --max-artifacts-bytes %d: must be at least 1", o.MaxArtifactBytes, o.MaxArtifactsBytes)
			}
			sb, err := swebenchPrepare(ctx, c, o, c.String("profile"), sampling, int(c.Int("max-tokens")), c.String("instances"), int(c.Int("num-instances")), c.Bool("official"))
			if err != nil {
				return err
			}
			return swebenchRun(ctx, c, sb)
		},
	}
}

// swebenchPrepare completes o with the instances and the generation
// parameters: everything that can be refused before the service is asked.
func swebenchPrepare(ctx context.Context, c *cli.Command, o swebench.Options, profile string, sampling datasets.Profile, maxTokens int, instances string, n int, official bool) (*swebench.Options, error) {
	rp, err := datasets.RunProfile(profile, sampling)
	if err != nil {
		return nil, fmt.Errorf("swebench: %w", err)
	}
	var p datasets.Profile
	if rp != nil {
		p = *rp
	}
	if o.Model == "" {
		o.Model = p.Model
	}
	if n < 1 {
		return nil, argsError("swebench", "--num-instances %d: must be at least 1", n)
	}
	ids, err := swebench.ReadInstances(ctx, instances, o.Subset, o.Split, n)
	if err != nil {
		return nil, fmt.Errorf("swebench: %w", err)
	}
	if len(ids) < n {
		problem(c, kindWarning, fmt.Sprintf("num_instances %d exceeds the dataset's %d instances; evaluating %d", n, len(ids), len(ids)))
	}
	if !swebench.OfficialInstances(ids) {
		why := fmt.Sprintf("the %s evaluated are not the benchmark's (the first %d of %s at revision %s, whose list has sha256 %s; this one's is %s)",
			english.Count(len(ids), "instance", "instances"), swebench.OfficialNumInstances, swebench.OfficialDataset,
			swebench.OfficialRevision[:12], swebench.OfficialInstancesDigest[:12], swebench.InstancesSHA256(ids)[:12])
		if official {
			return nil, fmt.Errorf("swebench: --official: %s", why)
		}
		problem(c, kindNote, why+": the result is unofficial")
	}
	o.IDs, o.InstancesFile = ids, instances
	o.Generation = swebench.GenerationParams(p, maxTokens)
	return &o, nil
}

// swebenchRun runs the service run o describes and prints its score. Its exit
// status (README "Exit status"): 2 when refused before a service run was
// submitted, 3 when one was and gave no whole result (it failed or was
// cancelled, its result is invalid or incomplete, an artifact was not
// downloaded).
func swebenchRun(ctx context.Context, c *cli.Command, o *swebench.Options) error {
	res, err := swebench.Run(ctx, *o)
	if err != nil {
		if res != nil && res.RunID != "" {
			return withStatus(exitIncomplete, err)
		}
		return err
	}
	r, warn, err := score.ReadSWEBenchReport(ctx, o.Out, 0)
	for _, w := range warn {
		problem(c, kindWarning, w)
	}
	if err != nil {
		return withStatus(exitIncomplete, fmt.Errorf("swebench: service run %s: %w", res.RunID, err))
	}
	incomplete := ""
	if r.Incomplete {
		incomplete = ", incomplete"
	}
	fmt.Fprintf(c.Root().Writer, "SWE-bench: resolved %d / %d evaluated (%.1f%%), %d submitted%s; %s\n",
		r.Resolved, r.Evaluated, r.Score*100, r.Submitted, incomplete, filepath.Join(o.Out, swebench.ResultsFile))
	var whole []string
	if r.Incomplete {
		whole = append(whole, fmt.Sprintf("the service submitted %d of the %d instances evaluated", r.Submitted, r.Evaluated))
	}
	if len(res.Unfetched) > 0 {
		whole = append(whole, fmt.Sprintf("%s not downloaded (%s)", english.Count(len(res.Unfetched), "artifact", "artifacts"), strings.Join(res.Unfetched, "; ")))
	}
	if len(whole) > 0 {
		return withStatus(exitIncomplete, fmt.Errorf("swebench: service run %s is not whole: %s", res.RunID, strings.Join(whole, "; ")))
	}
	return nil
}

// prepareAccuracy readies a --config's swe_bench_scorer accuracy dataset (--mode
// acc, both) for the service (swebenchRun), into RUNDIR/swebench (the reference
// writes its swe_bench_results.json into the report folder): its extras give the
// service and the run's size, the config's model_params the generation
// parameters, the performance dataset's routing headers the routing_headers.
// --mode both prepares it before its performance run, so that a mistake in it is
// refused before anything is done.
func prepareAccuracy(ctx context.Context, c *cli.Command, cr *replay.ConfigRun, o replay.Options) (*swebench.Options, error) {
	if cr == nil {
		return nil, argsError("replay", "--mode %s needs --config (its accuracy dataset)", c.String("mode"))
	}
	var ds *refconfig.Dataset
	for i := range cr.Accuracy {
		d := &cr.Accuracy[i]
		if d.Scorer() == refconfig.EvalSWEBench {
			if ds != nil {
				return nil, fmt.Errorf("replay: config %s: two swe_bench_scorer datasets", o.ConfigFile)
			}
			ds = d
			continue
		}
		return nil, &refconfig.Error{File: o.ConfigFile, Path: "datasets[" + d.DisplayName() + "].accuracy_config.eval_method",
			Msg: fmt.Sprintf("%q: agentrace runs the swe_bench_scorer accuracy tier only (use --mode perf for the performance dataset)", d.Scorer())}
	}
	if ds == nil {
		return nil, fmt.Errorf("replay: config %s has no swe_bench_scorer accuracy dataset for --mode %s", o.ConfigFile, c.String("mode"))
	}
	ex, err := swebenchExtras(ds, o)
	if err != nil {
		return nil, err
	}
	if len(o.Endpoints) > 0 {
		return nil, &refconfig.Error{File: o.ConfigFile, Path: "endpoint_config.endpoints", Msg: "SWE-bench service mode supports exactly one endpoint URL"}
	}
	so := swebench.Options{
		Service: ex.service, AuthTokenEnv: ex.tokenEnv, AuthToken: ex.token, Endpoint: o.Endpoint, Model: o.Model,
		EndpointAPIKeyEnv: o.APIKeyEnv, EndpointAPIKey: o.APIKey,
		Template: ex.template, Workers: ex.workers, MaxEvalWorkers: ex.maxEval, Subset: ex.subset, Split: ex.split,
		Out: filepath.Join(o.Out, "swebench"), Overwrite: o.Overwrite, Timeout: ex.timeout, PollInterval: ex.poll,
		RoutingHeaders: o.RoutingHeaders, Events: prefixed(c, "swebench"),
	}
	if c.IsSet("swebench-token-env") {
		so.AuthTokenEnv, so.AuthToken = c.String("swebench-token-env"), ""
	}
	if c.IsSet("instances") {
		ex.instances = c.String("instances")
	}
	if ex.instances == "" {
		return nil, fmt.Errorf("replay: --mode %s: give --instances (the SWE-bench split as Parquet or JSONL, or the reference's datasets folder)", c.String("mode"))
	}
	return swebenchPrepare(ctx, c, so, o.Profile, o.Sampling, o.MaxTokens, ex.instances, ex.num, false)
}

type extras struct {
	service, token, tokenEnv, template, subset, split, instances string
	num, workers, maxEval                                        int
	timeout, poll                                                time.Duration
}

// swebenchExtras reads accuracy_config.extras as the reference scorer's
// _resolve_options does.
func swebenchExtras(d *refconfig.Dataset, o replay.Options) (*extras, error) {
	ex := &extras{num: 100, workers: swebench.DefaultWorkers, maxEval: swebench.DefaultMaxEvalWorkers,
		template: "default", subset: "verified", split: "test", timeout: swebench.DefaultTimeout, poll: swebench.DefaultPollInterval}
	m := map[string]any{}
	if d.AccuracyConfig != nil && d.AccuracyConfig.Extras != nil {
		m = d.AccuracyConfig.Extras
	}
	bad := func(k, format string, a ...any) error {
		return &refconfig.Error{File: o.ConfigFile, Path: "accuracy_config.extras." + k, Msg: fmt.Sprintf(format, a...)}
	}
	if _, ok := m["enable_swebench_toolcall_patch"]; ok {
		return nil, bad("enable_swebench_toolcall_patch", "has been removed; use swebench_template: qwen_tools instead")
	}
	str := func(k string, dst *string) {
		if v, ok := m[k]; ok && v != nil {
			*dst = fmt.Sprint(v)
		}
	}
	integer := func(k string, dst *int, min int) error {
		v, ok := m[k]
		if !ok || v == nil {
			return nil
		}
		var n int
		switch v := v.(type) {
		case int:
			n = v
		case float64:
			n = int(v)
		case string:
			if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
				return bad(k, "must be an integer; got %q", v)
			}
		default:
			return bad(k, "must be an integer; got %v", v)
		}
		if n < min {
			return bad(k, "must be >= %d; got %d", min, n)
		}
		*dst = n
		return nil
	}
	str("swebench_service_url", &ex.service)
	if ex.service == "" {
		return nil, bad("swebench_service_url", "is required for swe_bench_scorer")
	}
	// the token itself (typically "${SWEBENCH_TOKEN}", expanded at load), used
	// and never written; or, agentrace's own key, the variable's name
	str("swebench_service_auth_token", &ex.token)

	str("swebench_template", &ex.template)
	str("subset", &ex.subset)
	str("split", &ex.split)
	str("instances", &ex.instances)
	for _, f := range []struct {
		k   string
		dst *int
	}{{"num_instances", &ex.num}, {"workers", &ex.workers}, {"max_eval_workers", &ex.maxEval}} {
		if err := integer(f.k, f.dst, 1); err != nil {
			return nil, err
		}
	}
	// the schema forwards target_concurrency as workers when unset
	if _, ok := m["workers"]; !ok && o.Concurrency > 0 {
		ex.workers = o.Concurrency
	}
	var t int
	if err := integer("service_timeout_s", &t, 1); err != nil {
		return nil, err
	}
	if t > 0 {
		ex.timeout = time.Duration(t) * time.Second
	}
	if v, ok := m["poll_interval_s"]; ok && v != nil {
		f, ok := v.(float64)
		if i, isInt := v.(int); isInt {
			f, ok = float64(i), true
		}
		if !ok || f < 0 {
			return nil, bad("poll_interval_s", "must be a number >= 0; got %v", v)
		}
		ex.poll = time.Duration(f * float64(time.Second))
	}
	return ex, nil
}
