// Package e2e holds end-to-end tests that cross stages: they drive replay against
// the simulated endpoint and score the runs it writes. It has no code of its own;
// it exists so that score never imports replay, not even in its tests.
package e2e
