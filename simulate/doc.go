// Package simulate runs the embedded simulator's scheduler and cost model
// (simserver) in virtual time: a discrete-event loop with no HTTP and no
// sleeping, so that a sweep of a full-size dataset to high concurrency takes
// seconds of wall time. It drives two workloads:
//
//   - a dataset's agentic trajectories, closed-loop, as replay drives a server:
//     trajectory k replays the k-th conversation datasets.StartOrder draws
//     (seeded by Options.OrderSeed) as instance k div n + 1 with its
//     session id, salted system prompt and request bodies
//     (datasets.(*Dataset).AppendBody), each turn sent its delay after the
//     previous one completed, the performance window ending when a slot finishes
//     a trajectory and none is left to start;
//   - random prompts of a fixed length without shared prefixes (ISL, OSL), closed
//     loop at the concurrency, as serving benchmarks run, for calibration.
//
// Every turn becomes a schemas.TurnRecord on a modelled clock, and a point's
// metrics are folded by metrics' Accumulator, the code `report` uses for runs:
// system_tps, e2e_avg_interactivity, the TTFT/TPOT/ITL percentiles and the
// prefix-cache hit ratio mean the same here as for a real run.
//
// With Replicas > 1 the turns are routed across replicas, each with its own
// scheduler and prefix cache: by session (the X-Session-ID that keeps a
// trajectory's KV on one replica), round robin, or to the least-loaded replica.
//
// The package never imports the client (replay); it shares the sim's model,
// not its HTTP server, so its numbers agree with a real-time replay against
// `agentrace sim` (e2e TestSimulateAgreesWithRealTime).
package simulate
