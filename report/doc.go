// Package report computes the rules' metrics per measurement point, the Pareto step
// curve and its regions, plots, and a self-contained HTML report.
package report
