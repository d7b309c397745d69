package tokens

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/redact"
)

// A tokenizer is named the way the reference client names it to
// AutoTokenizer.from_pretrained: a local model folder, or a Hugging Face model
// id ("Qwen/Qwen3.6-35B-A3B") looked up in the local hub cache, the layout
// huggingface_hub writes:
//
//	HUB/models--ORG--NAME/refs/REVISION     the commit the revision points at
//	HUB/models--ORG--NAME/snapshots/COMMIT/ the files of that commit
//
// Resolution never touches the network: a model that is not in the cache is an
// error naming every path tried and the command that fetches the files.

// DefaultRevision is the revision a model id resolves at when none is given.
const DefaultRevision = "main"

// modelID is the shape of a Hugging Face model id: ORG/NAME.
var modelID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// commitHash is a full git commit id, which names a snapshot directly.
var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// HubCaches returns the Hugging Face hub cache folders a model id is looked up
// in, in order, as huggingface_hub chooses them: HF_HUB_CACHE when set, else
// HF_HOME/hub when HF_HOME is set, else XDG_CACHE_HOME/huggingface/hub when that
// is set, else ~/.cache/huggingface/hub.
func HubCaches() []string {
	if v := os.Getenv("HF_HUB_CACHE"); v != "" {
		return []string{v}
	}
	if v := os.Getenv("HF_HOME"); v != "" {
		return []string{filepath.Join(v, "hub")}
	}
	if v := os.Getenv("XDG_CACHE_HOME"); v != "" {
		return []string{filepath.Join(v, "huggingface", "hub")}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	return []string{filepath.Join(home, ".cache", "huggingface", "hub")}
}

// Resolve returns the folder that spec names: spec itself when it is a local
// folder or file, else the snapshot of the Hugging Face model id spec at
// revision ("" for DefaultRevision: a branch or tag under refs/, or a full commit
// id) in the hub cache (HubCaches). It reads nothing but the local disk. A spec
// found nowhere is an error that names every path tried and the command that
// fetches the tokenizer files.
func Resolve(spec, revision string) (string, error) {
	if spec == "" {
		return "", errors.New("no tokenizer given")
	}
	if revision == "" {
		revision = DefaultRevision
	}
	_, localErr := os.Stat(spec)
	if localErr == nil {
		if revision != DefaultRevision {
			return "", fmt.Errorf("tokenizer %q is a local folder: a revision (%q) applies only to a Hugging Face model id", spec, revision)
		}
		return spec, nil
	}
	tried := []string{fmt.Sprintf("%s (%s)", spec, why(localErr))}
	if !modelID.MatchString(spec) {
		return "", fmt.Errorf("tokenizer %q: not found: tried %s; give a model folder holding %s (or %s), or a Hugging Face model id such as Qwen/Qwen3.6-35B-A3B",
			spec, tried[0], HFTokenizerFile, TiktokenFile)
	}
	repo := "models--" + strings.ReplaceAll(spec, "/", "--")
	for _, hub := range HubCaches() {
		root := filepath.Join(hub, repo)
		commit := revision
		if !commitHash.MatchString(revision) {
			ref := filepath.Join(root, "refs", filepath.FromSlash(revision))
			data, err := infile.ReadSmall(ref, refLimit)
			if err != nil {
				tried = append(tried, fmt.Sprintf("%s (%s)", ref, why(err)))
				continue
			}
			commit = strings.TrimSpace(string(data))
			if !commitHash.MatchString(commit) {
				tried = append(tried, fmt.Sprintf("%s (holds %s, not a commit id)", ref, excerpt(commit)))
				continue
			}
		}
		snap := filepath.Join(root, "snapshots", commit)
		if st, err := os.Stat(snap); err != nil || !st.IsDir() {
			tried = append(tried, fmt.Sprintf("%s (%s)", snap, why(err)))
			continue
		}
		if !exists(filepath.Join(snap, HFTokenizerFile)) && !exists(filepath.Join(snap, TiktokenFile)) {
			tried = append(tried, fmt.Sprintf("%s (%s)", snap, noTokenizerMsg))
			continue
		}
		return snap, nil
	}
	if len(tried) == 1 {
		tried = append(tried, "no Hugging Face cache folder (HOME is not set)")
	}
	return "", fmt.Errorf("tokenizer %q at revision %q: not a local folder and not in the Hugging Face cache (never downloaded: agentrace does not use the network); tried:\n  %s\nfetch the files on a machine with network access (then copy the cache, or point HF_HUB_CACHE at it):\n  %s",
		spec, revision, strings.Join(tried, "\n  "), FetchCommand(spec, revision))
}

// hubModel returns the model id of a hub cache snapshot folder
// (.../models--ORG--NAME/snapshots/COMMIT).
func hubModel(dir string) (string, bool) {
	dir = filepath.Clean(dir)
	snaps := filepath.Dir(dir)
	repo := filepath.Base(filepath.Dir(snaps))
	if filepath.Base(snaps) != "snapshots" || !strings.HasPrefix(repo, "models--") {
		return "", false
	}
	org, name, ok := strings.Cut(strings.TrimPrefix(repo, "models--"), "--")
	if !ok || org == "" || name == "" {
		return "", false
	}
	return org + "/" + name, true
}

// FetchCommand is the command that puts a model's tokenizer files into the
// local Hugging Face cache.
func FetchCommand(model, revision string) string {
	cmd := "hf download " + model
	if revision != "" && revision != DefaultRevision {
		cmd += " --revision " + revision
	}
	return cmd + " " + HFTokenizerFile + " " + ConfigFile + " " + TemplateFile
}

// excerptBytes is the most of a file's content an error quotes.
const excerptBytes = 64

// excerpt quotes what an error shows of a file's content s: its first line, at
// most excerptBytes of it (cut on a character boundary, "..." marking a cut),
// with what redact.Text masks masked, and how long s is when it was cut.
func excerpt(s string) string {
	line, _, multi := strings.Cut(s, "\n")
	cut := multi || len(line) > excerptBytes
	if len(line) > excerptBytes {
		n := excerptBytes
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line = line[:n]
	}
	q := strconv.Quote(redact.Text(line))
	if cut {
		return fmt.Sprintf("%s... (%d bytes)", q, len(s))
	}
	return q
}

func why(err error) string {
	switch {
	case err == nil:
		return "not a folder"
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or folder"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
