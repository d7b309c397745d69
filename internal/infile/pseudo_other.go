//go:build !linux

package infile

import "os"

func pseudoFile(*os.File) (string, bool) { return "", false }

func pseudoPath(string) (string, bool) { return "", false }
