// Package replay drives an OpenAI-compatible endpoint with a dataset's trajectories,
// closed-loop at a target number of active trajectories, and writes a per-turn Arrow
// log.
package replay
