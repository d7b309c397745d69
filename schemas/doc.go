// Package schemas holds agentrace's data contracts: the Parquet row structs of a
// dataset directory, the manifests, the Arrow schema of a replay turn log, and the
// records that scoring and reporting write.
//
// Every stage reads and writes through these types, so they change only together
// with Version. The package imports nothing of agentrace's own.
package schemas

import "runtime/debug"

// Version is the schema version written into every manifest and output. Bump it
// whenever a column or field changes meaning. scores.json carries its own
// ScoresVersion, so that a change of the verdict's shape does not refuse every
// dataset written before it, and a dataset manifest its own DatasetVersion.
const Version = "2"

// ToolVersion is the version of agentrace that writes a file.
const ToolVersion = "0.1.0"

// GitSHA is the revision agentrace was built from (the build's vcs.revision, as
// `go build` stamps it in a git checkout), "" when the build records none (go
// test, go run, a build outside a checkout or with -buildvcs=false).
func GitSHA() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}

// Domains of a conversation. A conversation is a workflow conversation when its id
// matches ^sim_\d+$, otherwise a coding conversation.
const (
	DomainCoding   = "coding"
	DomainWorkflow = "workflow"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)
