package schemas

// SWEBenchRunFile is the record `agentrace swebench` writes beside
// swe_bench_results.json in its output folder.
const SWEBenchRunFile = "swebench.json"

// SWEBenchRun is swebench.json: the service run behind a folder's
// swe_bench_results.json, with the number of instances submitted for
// evaluation, the denominator of its score.
type SWEBenchRun struct {
	SchemaVersion string `json:"schema_version"`
	ToolVersion   string `json:"tool_version"`
	// Service is the service's root URL (redacted); RunID its run id; State how
	// the run ended (succeeded, failed, cancelled, or "" when it was never
	// followed to the end).
	Service string `json:"service"`
	RunID   string `json:"run_id"`
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
	// Problem is why the run gave no whole result on agentrace's side (the
	// service's run failed, the download was interrupted, ...); absent when it
	// did.
	Problem  string `json:"problem,omitempty"`
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	Subset   string `json:"subset"`
	Split    string `json:"split"`
	Template string `json:"template"`
	Workers  int    `json:"workers"`
	MaxEval  int    `json:"max_eval_workers"`
	// RoutingHeaders are the routing_headers sent: the headers the service's
	// agents set to their trajectory's session id.
	RoutingHeaders []string `json:"routing_headers"`
	Instances      string   `json:"instances"`
	// InstancesSHA256 is the sha256 of the evaluated ids joined by newlines
	// with a final newline; OfficialInstances whether they are the
	// benchmark's pinned list (the first 200 of SWE-bench Verified at the
	// reference's revision).
	InstancesSHA256   string `json:"instances_sha256"`
	OfficialInstances bool   `json:"official_instances"`
	// Evaluated is len(EvaluatedIDs).
	Evaluated    int      `json:"evaluated"`
	EvaluatedIDs []string `json:"evaluated_instance_ids"`
	// GenerationParams is the generation_params object sent.
	GenerationParams map[string]any `json:"generation_params"`
	Artifacts        []string       `json:"artifacts,omitempty"`
	// Unfetched are the artifacts the service listed that were not
	// downloaded, each with why.
	Unfetched []string `json:"unfetched,omitempty"`
}
