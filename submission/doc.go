// Package submission writes a submission tree as the MLCommons submission checker
// reads one (mlcommons/endpoints-submission-cli layout.py: results/<system>/<model>/r<N>/,
// docs/, src/<implementation>/README.md) from agentrace sweeps and a submitter
// file, the small file of what only the submitter knows, and writes the
// reference's formats: each point's result_summary.json (metrics' fold),
// accuracy_results.json and point.yaml, beside a run (Publish, `agentrace
// publish`) or in the tree, with the layout, the system descriptions and the
// list of what is left open. It reads curves from score/curve and never imports
// report. It never invents a field.
package submission
