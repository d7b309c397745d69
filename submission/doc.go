// Package submission writes a submission tree as the MLCommons submission checker
// reads one (mlcommons/endpoints-submission-cli layout.py: results/<system>/<model>/r<N>/,
// docs/, src/<implementation>/README.md) from agentrace sweeps and a submitter
// file, the small file of what only the submitter knows. It comes after report in
// the stages: each point's files are report's (result_summary.json,
// accuracy_results.json, point.yaml); it adds the layout, the system
// descriptions and the list of what is left open. It never invents a field.
package submission
