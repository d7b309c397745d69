package outguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Claim is an output folder taken by Begin, to be written in place.
type Claim struct {
	// Path is the output folder, created and marked.
	Path string
	// aside holds an earlier output moved out of the way (in aside/old), "" when
	// there was none.
	aside string
	// created tells that Begin created Path (it did not exist, or was replaced).
	created bool
}

// Begin takes the folder o.Path for a new output written in place: it checks o
// against inputs (Output.Check), moves an earlier output of the same kind aside
// (a hidden folder beside it), creates the folder and marks it as o.Kind. An empty
// folder already there is used as it is. Call Finish when the new output has been
// written (even partly: an interrupted run is still a run), or Abandon when
// nothing of it was worth keeping, to put the earlier output back.
func Begin(o Output, inputs ...string) (*Claim, error) {
	if !o.Kind.Folder {
		return nil, fmt.Errorf("outguard: Begin is for folder outputs, not %s", o.Kind.Name)
	}
	if o.Path == "" {
		return nil, errors.New("no output path given")
	}
	if err := CheckPaths(o.Path, inputs...); err != nil {
		return nil, err
	}
	got, err := o.existing()
	if err != nil {
		return nil, err
	}
	c := &Claim{Path: o.Path}
	if got != "" {
		parent := filepath.Dir(o.Path)
		aside, err := os.MkdirTemp(parent, "."+filepath.Base(o.Path)+".replaced-*")
		if err != nil {
			return nil, fmt.Errorf("move the earlier %s %q aside: %w", got, o.Path, err)
		}
		if err := os.Rename(o.Path, filepath.Join(aside, "old")); err != nil {
			os.Remove(aside)
			return nil, fmt.Errorf("move the earlier %s %q aside: %w", got, o.Path, err)
		}
		c.aside = aside
	}
	if _, err := os.Stat(o.Path); errors.Is(err, os.ErrNotExist) {
		c.created = true
	}
	if err := os.MkdirAll(o.Path, 0o755); err != nil {
		c.Abandon()
		return nil, fmt.Errorf("create %q: %w", o.Path, err)
	}
	if err := MarkDir(o.Path, o.Kind); err != nil {
		c.Abandon()
		return nil, err
	}
	return c, nil
}

// Finish deletes the earlier output Begin moved aside, if any.
func (c *Claim) Finish() error {
	if c == nil || c.aside == "" {
		return nil
	}
	aside := c.aside
	c.aside = ""
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("remove the earlier output of %q (moved to %q): %w", c.Path, aside, err)
	}
	return nil
}

// Abandon undoes Begin: it removes the folder Begin created (with whatever was
// written into it since) and puts the earlier output back. An empty folder that
// was there before is left as it was, marker aside.
func (c *Claim) Abandon() error {
	if c == nil {
		return nil
	}
	var errs []error
	if c.created {
		errs = append(errs, os.RemoveAll(c.Path))
	} else {
		if err := os.Remove(filepath.Join(c.Path, MarkerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if c.aside != "" {
		if err := os.Rename(filepath.Join(c.aside, "old"), c.Path); err != nil {
			errs = append(errs, fmt.Errorf("put the earlier output back from %q: %w", c.aside, err))
		} else {
			errs = append(errs, os.Remove(c.aside))
		}
		c.aside = ""
	}
	return errors.Join(errs...)
}
