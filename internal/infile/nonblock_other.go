//go:build !unix

package infile

import "os"

const nonblock = 0

func clearNonblock(*os.File) error { return nil }
