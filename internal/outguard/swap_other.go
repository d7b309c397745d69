//go:build !linux

package outguard

import "errors"

// exchange is not offered here: the swap moves the earlier output aside first.
func exchange(a, b string) error { return errors.ErrUnsupported }
