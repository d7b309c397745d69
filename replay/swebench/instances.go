package swebench

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/parquet-go/parquet-go"
)

// The benchmark's instance list, as the reference pins it: the first
// OfficialNumInstances ids of OfficialDataset (split test) at OfficialRevision,
// whose list has the digest OfficialInstancesDigest (InstancesSHA256).
const (
	OfficialDataset         = "princeton-nlp/SWE-bench_Verified"
	OfficialRevision        = "c104f840cc67f8b6eec6f759ebc8b2693d585d4a"
	OfficialNumInstances    = 200
	OfficialInstancesDigest = "4b562a390c5bfe39a9b00d503ebce1d8b7d1c60f6b761617317a0c507534f40f"
)

// InstancesSHA256 is the hex sha256 of ids joined by newlines, with a final
// newline: the digest the reference pins its instance list by.
func InstancesSHA256(ids []string) string {
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// OfficialInstances tells whether ids are the benchmark's pinned instance list.
func OfficialInstances(ids []string) bool {
	return len(ids) == OfficialNumInstances && InstancesSHA256(ids) == OfficialInstancesDigest
}

// CachePath is where the reference caches a SWE-bench split under its
// datasets folder.
func CachePath(dir, subset, split string) string {
	return filepath.Join(dir, "swe_bench", subset, split, fmt.Sprintf("swe_bench_%s_%s.parquet", subset, split))
}

// ReadInstances returns the first n instance ids (all when n <= 0), in file
// order, of a SWE-bench split: a Parquet file or JSON Lines with instance_id,
// as the Hugging Face dataset's rows, or the reference's datasets folder
// holding its cached Parquet (CachePath). Reading stops when ctx is done.
func ReadInstances(ctx context.Context, path, subset, split string, n int) ([]string, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = CachePath(path, subset, split)
	}
	var ids []string
	var err error
	if strings.HasSuffix(strings.ToLower(path), ".parquet") {
		ids, err = parquetIDs(ctx, path, n)
	} else {
		ids, err = jsonlIDs(path, n)
	}
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("read instances %q: no instance", path)
	}
	return ids, nil
}

func parquetIDs(ctx context.Context, path string, n int) ([]string, error) {
	var ids []string
	errEnough := errors.New("enough instances")
	err := infile.ReadColumns(ctx, path, []string{"instance_id"}, false, func(int64) {}, func(_ int, _ int64, v parquet.Value) error {
		ids = append(ids, string(v.ByteArray()))
		if n > 0 && len(ids) == n {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, fmt.Errorf("read instances %q: %w", path, err)
	}
	return ids, nil
}

func jsonlIDs(path string, n int) ([]string, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read instances: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var ids []string
	for line := 1; sc.Scan(); line++ {
		b := strings.TrimSpace(sc.Text())
		if b == "" {
			continue
		}
		var row struct {
			InstanceID *string `json:"instance_id"`
		}
		if err := json.Unmarshal([]byte(b), &row); err != nil {
			return nil, fmt.Errorf("read instances %q line %d: %w", path, line, err)
		}
		if row.InstanceID == nil || *row.InstanceID == "" {
			return nil, fmt.Errorf("read instances %q line %d: no instance_id", path, line)
		}
		ids = append(ids, *row.InstanceID)
		if n > 0 && len(ids) == n {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read instances %q: %w", path, err)
	}
	return ids, nil
}

// GenerationParams is the generation_params the reference's scorer sends: the
// sampling settings of model_params that are set, in its order (temperature,
// seed, top_p, top_k, repetition_penalty, presence_penalty, frequency_penalty,
// max_new_tokens, chat_template_kwargs), floats as Python writes them.
// maxNewTokens <= 0 takes the schema's 1024.
func GenerationParams(p datasets.Profile, maxNewTokens int) string {
	b := []byte{'{'}
	key := func(k string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, k)
		b = append(b, ':')
	}
	fl := func(k string, v *float64) {
		if v != nil {
			key(k)
			b = jsontext.AppendPyFloat(b, *v)
		}
	}
	fl("temperature", p.Temperature)
	if p.Seed != "" {
		key("seed")
		b = append(b, p.Seed...)
	}
	fl("top_p", p.TopP)
	if p.TopK != nil {
		key("top_k")
		b = strconv.AppendInt(b, int64(*p.TopK), 10)
	}
	fl("repetition_penalty", p.RepetitionPenalty)
	fl("presence_penalty", p.PresencePenalty)
	fl("frequency_penalty", p.FrequencyPenalty)
	if maxNewTokens <= 0 {
		maxNewTokens = p.MaxTokens
	}
	if maxNewTokens <= 0 {
		maxNewTokens = datasets.DefaultRunMaxTokens
	}
	key("max_new_tokens")
	b = strconv.AppendInt(b, int64(maxNewTokens), 10)
	switch {
	case p.ChatTemplateKwargsJSON != "":
		key("chat_template_kwargs")
		b = append(b, p.ChatTemplateKwargsJSON...)
	case p.ChatTemplateKwargs != nil:
		key("chat_template_kwargs")
		b = datasets.AppendKwargs(b, p.ChatTemplateKwargs)
	}
	return string(append(b, '}'))
}
