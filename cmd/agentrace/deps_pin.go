//go:build tools

// This file pins the libraries the stages are built on while they are being
// written, so that go.mod stays stable; it is not part of any build.
package main

import (
	_ "github.com/apache/arrow-go/v18/arrow/ipc"
	_ "github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/ardanlabs/jinja"
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/sourcegraph/conc/pool"
	_ "github.com/urfave/cli/v3"
	_ "golang.org/x/crypto/blake2b"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/cmpimg"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg/vgsvg"
)
