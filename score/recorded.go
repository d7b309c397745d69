package score

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/tokens"
)

// Counting is how a run's token counts were made, as the run records it: the
// tokenizer (its identity and digests) or the server's usage counts. The first
// command that counts (score, or publish and report, which count as score does)
// records it, in scores.json's osl block and in the published
// result_summary.json's agentrace block; every later command counts the same
// way unless told otherwise (Recorded).
type Counting struct {
	// Tokenizer is the tokenizer the counts were made with; nil: the server's
	// usage counts.
	Tokenizer *schemas.TokenizerUse
	// Runs are the runs that record it (their labels), in the order found.
	Runs []string
	// Dir is the recorded tokenizer's folder on this machine: the first of
	// Tried whose vocabulary file has the recorded digest; "" when none has
	// (or for the server's usage counts).
	Dir string
	// Tried are the folders looked in for the tokenizer, with why each was not it.
	Tried []string
}

// ServerUsage reports whether the counts came from the server's usage.
func (c *Counting) ServerUsage() bool { return c.Tokenizer == nil }

// String names the counting: "tokenizer NAME (FILE sha256 PREFIX)" or "the
// server's usage counts".
func (c *Counting) String() string {
	if c.Tokenizer == nil {
		return "the server's usage counts"
	}
	u := c.Tokenizer
	return fmt.Sprintf("tokenizer %s (%s sha256 %.12s)", u.Name, u.File, u.TokenizerSHA256)
}

// key tells countings apart: the digests of the tokenizer file and of the chat
// template, which decide every count.
func (c *Counting) key() string {
	if c.Tokenizer == nil {
		return "server_usage"
	}
	return c.Tokenizer.TokenizerSHA256 + "/" + c.Tokenizer.TemplateSHA256
}

// Same reports whether dir (a resolved tokenizer folder; "" for the server's
// usage counts) counts as the recorded counting does: its vocabulary file has
// the recorded digest.
func (c *Counting) Same(dir string) (bool, error) {
	if dir == "" || c.Tokenizer == nil {
		return dir == "" && c.Tokenizer == nil, nil
	}
	sum, err := fileSHA256(filepath.Join(dir, c.Tokenizer.File))
	if err != nil {
		return false, err
	}
	return sum == c.Tokenizer.TokenizerSHA256, nil
}

// Recorded returns how the runs under args (run, sweep and submission folders;
// archives are not opened for it) recorded their token counts: from each run's
// scores.json, else its published result_summary.json's agentrace block. nil
// when no run records one (a reference client's runs, runs never scored). Runs
// that record different countings are an error that names them: a command
// then needs --tokenizer. A recorded tokenizer is looked for (Counting.Dir) where
// it was asked for (an absolute folder; a relative one from the working folder
// and from each folder above the run; a Hugging Face model id in the local
// cache) and taken only where its vocabulary file has the recorded digest.
func Recorded(args []string) (*Counting, error) {
	var found []*Counting
	byKey := map[string]*Counting{}
	var bases []string // folders of the runs recording a tokenizer
	for _, a := range args {
		if st, err := os.Stat(a); err != nil || !st.IsDir() {
			continue
		}
		src, inner, err := archive.OpenPath(a, archive.Limits{})
		if err != nil {
			return nil, err
		}
		runs := archive.Under(archive.Find(src), inner)
		for _, r := range runs {
			if r.Err != nil {
				continue
			}
			c, ok := recordedBy(r)
			if !ok {
				continue
			}
			k := c.key()
			if prev := byKey[k]; prev != nil {
				prev.Runs = append(prev.Runs, r.Label)
			} else {
				c.Runs = []string{r.Label}
				byKey[k] = c
				found = append(found, c)
			}
			if c.Tokenizer != nil {
				bases = append(bases, filepath.Join(src.Path, filepath.FromSlash(r.Dir)))
			}
		}
		src.Close()
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
	default:
		var parts []string
		for _, c := range found {
			parts = append(parts, fmt.Sprintf("%s (%s)", c, c.RunsNamed()))
		}
		return nil, fmt.Errorf("the runs were counted in %d ways: %s", len(found), strings.Join(parts, "; "))
	}
	c := found[0]
	if c.Tokenizer != nil {
		c.locate(bases)
	}
	return c, nil
}

// recordedBy reads how one run recorded its counts; false when it records none.
func recordedBy(r *archive.Run) (*Counting, bool) {
	if r.Has(archive.ScoresFile) {
		var s struct {
			OSL *struct {
				Source    string                `json:"source"`
				Tokenizer *schemas.TokenizerUse `json:"tokenizer"`
			} `json:"osl"`
		}
		if b, err := r.ReadFile(archive.ScoresFile); err == nil && json.Unmarshal(b, &s) == nil && s.OSL != nil {
			if c, ok := counting(s.OSL.Source, s.OSL.Tokenizer); ok {
				return c, true
			}
		}
	}
	if name := r.SummaryName(); name != "" {
		var s struct {
			Agentrace *struct {
				TokenSource string                `json:"token_source"`
				Tokenizer   *schemas.TokenizerUse `json:"tokenizer"`
			} `json:"agentrace"`
		}
		if b, err := r.ReadFile(name); err == nil && json.Unmarshal(b, &s) == nil && s.Agentrace != nil {
			return counting(s.Agentrace.TokenSource, s.Agentrace.Tokenizer)
		}
	}
	return nil, false
}

// counting is the Counting a recorded source and tokenizer name; false for
// sources that record no counting of agentrace's (a published summary's figure).
func counting(source string, u *schemas.TokenizerUse) (*Counting, bool) {
	switch {
	case strings.HasPrefix(source, "tokenizer") && u != nil && u.TokenizerSHA256 != "":
		return &Counting{Tokenizer: u}, true
	case source == "server_usage":
		return &Counting{}, true
	}
	return nil, false
}

// locate looks for the recorded tokenizer's folder (see Recorded).
func (c *Counting) locate(bases []string) {
	spec := c.Tokenizer.Spec
	if spec == "" {
		c.Tried = append(c.Tried, "nowhere: the runs record no folder or model id")
		return
	}
	cands := []string{spec}
	if !filepath.IsAbs(spec) {
		seen := map[string]bool{}
		for _, b := range bases {
			abs, err := filepath.Abs(b)
			if err != nil {
				continue
			}
			for d := abs; !seen[d]; d = filepath.Dir(d) {
				seen[d] = true
				cands = append(cands, filepath.Join(d, spec))
			}
		}
	}
	for i, dir := range cands {
		if _, err := os.Stat(dir); err != nil {
			if i > 0 {
				continue
			}
			// spec itself: a folder that is not here, or a model id in the cache
			if dir, err = tokens.Resolve(spec, ""); err != nil {
				continue
			}
		}
		switch ok, err := c.Same(dir); {
		case err != nil:
			c.Tried = append(c.Tried, fmt.Sprintf("%s (%v)", dir, err))
		case !ok:
			c.Tried = append(c.Tried, fmt.Sprintf("%s (another %s)", dir, c.Tokenizer.File))
		default:
			c.Dir = dir
			if wd, err := os.Getwd(); err == nil && filepath.IsAbs(dir) && !filepath.IsAbs(spec) {
				if rel, err := filepath.Rel(wd, dir); err == nil {
					c.Dir = rel
				}
			}
			return
		}
	}
	c.Tried = append(c.Tried, fmt.Sprintf("%s from the working folder and from every folder above the runs (not there)", spec))
}

// RunsNamed names the runs that record the counting: the first three by label,
// then how many more.
func (c *Counting) RunsNamed() string {
	l := append([]string(nil), c.Runs...)
	sort.Strings(l)
	if len(l) > 3 {
		return strings.Join(l[:3], ", ") + fmt.Sprintf(" and %d more", len(l)-3)
	}
	return strings.Join(l, ", ")
}

// fileSHA256 is the SHA-256 in hex of a regular file's content, read streaming.
func fileSHA256(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
