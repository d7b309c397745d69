package datasets

import "github.com/agentrace/agentrace/schemas"

// PublishedDomain is one domain's row of the benchmark's published dataset
// table.
type PublishedDomain struct {
	Domain       string // schemas.DomainCoding or schemas.DomainWorkflow
	Trajectories int
	ClientTurns  int
}

// PublishedTable is the one home of the MLPerf agentic dataset's published
// figures, per domain: 113 coding trajectories with 15,981 client turns and 500
// workflow trajectories with 4,316 (613 and 20,297 in all). The synthetic
// profile follows them, the dataset card compares a dataset with them, and
// docs/commands.md quotes them from here.
func PublishedTable() (source string, domains []PublishedDomain) {
	return "the MLPerf Agentic Inference dataset's published table: 613 trajectories " +
			"(mlcommons/endpoints examples/10_Agentic_Inference README: \"The official dataset contains 613 trajectories\"), " +
			"113 coding with 15,981 client turns and 500 workflow with 4,316 (as the benchmark's dataset table is " +
			"quoted to agentrace's maintainers; the table itself is not public)",
		[]PublishedDomain{
			{Domain: schemas.DomainCoding, Trajectories: 113, ClientTurns: 15981},
			{Domain: schemas.DomainWorkflow, Trajectories: 500, ClientTurns: 4316},
		}
}
