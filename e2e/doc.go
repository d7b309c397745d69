// Package e2e holds end-to-end tests that cross stages: they drive replay against
// the simulated endpoint and score the runs it writes, and check the house itself
// (the stage import order, the README's commands and its map of the code). It has
// no code of its own; it exists so that score never imports replay, not even in
// its tests.
package e2e
