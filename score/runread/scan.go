package runread

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ScanOptions say what one pass over a run's log hands to whom. Every consumer
// set is fed from the same read: a run's log is opened and read once however
// many consumers there are.
type ScanOptions struct {
	// Records, when set, receives one schemas.TurnRecord per client turn, whatever
	// the log's format (see ScanTurns), with what an event log says of it beyond
	// the turn log's columns. The record is reused after the call.
	Records func(*schemas.TurnRecord, TurnExtra) error
	// Prompt, when set, counts the input tokens of an event log's issued sample
	// from the prompt its sample.issued event carries (the reference's PromptData:
	// ["PromptData", text, token_ids, messages, tools, chat_template_kwargs,
	// chat_template, tool_choice]), as the reference's metrics aggregator counts
	// ISL, into the TurnExtra Records receives. It is called once per sample
	// issued while performance tracking was on; ok false means no count. Turn logs
	// carry no prompt: it is never called.
	Prompt func(promptData json.RawMessage) (isl int, ok bool)
	// Batches, when set, receives each batch of a turn log as it is read, before
	// Records receive its rows (TurnLogRows.Add is one). The batch is released
	// after the call unless the consumer retains it.
	Batches func(arrow.RecordBatch) error
	// Allocator allocates a turn log's Arrow buffers (nil: Arrow's default); a
	// BufferPool recycles them across logs.
	Allocator memory.Allocator
	// Events, when set, receives each event of an event log with its line number:
	// the types scoring reads (sample.issued, sample.complete, the performance
	// tracking ones), and every other type too when Records are read. The event
	// and its Data are valid during the call only.
	Events func(e *Event, line int) error
	// Manifest is the run's manifest as the caller read it (archive.Facts), which
	// a turn log is checked against; nil: Scan reads it.
	Manifest *schemas.RunManifest
}

// ErrNoTurns is returned by Scan for a run with neither a turn log nor an event
// log.
var ErrNoTurns = errors.New("no turn log or event log")

// Scan reads a run's log once, from its turn log (turns.arrows, checked against
// its manifest by runlog.ScanRun: one that disagrees with a finished run's is
// refused) or its event log (events.jsonl, or a submission's
// mlperf_endpoints_log_detail.json), and feeds each consumer o names. TurnScan
// says what was read.
func Scan(ctx context.Context, run *archive.Run, o ScanOptions) (TurnScan, error) {
	var scan TurnScan
	if run.Has(archive.TurnLogFile) {
		scan.File = archive.TurnLogFile
		m := o.Manifest
		if m == nil && run.Has(archive.ManifestFile) {
			facts, err := run.Facts()
			if err != nil {
				return scan, fmt.Errorf("run %q: %w", run.Label, err)
			}
			m = facts.Manifest
		}
		rc, err := run.Open(archive.TurnLogFile)
		if err != nil {
			return scan, fmt.Errorf("read turn log: %w", err)
		}
		defer rc.Close()
		lr, err := ScanTurnLog(ctx, rc, m, o)
		if err != nil {
			return scan, fmt.Errorf("read turn log %q: %w", run.FileLabel(archive.TurnLogFile), err)
		}
		scan.Truncated, scan.Note, scan.Log = lr.Truncated, lr.Note, &lr.Log
		return scan, nil
	}
	r, name, err := OpenEvents(run)
	scan.File = name
	if err != nil {
		return scan, err
	}
	defer r.Close()
	if err := ScanEvents(ctx, r, o, &scan); err != nil {
		return scan, fmt.Errorf("read event log %q: %w", run.FileLabel(name), err)
	}
	return scan, nil
}

// ScanTurnLog reads an open turn log once, checked against the run's manifest m
// (when not nil) by runlog.ScanRun, feeding o's Batches and Records. A log cut
// short gives the rows of its complete batches, the LogRead's Truncated saying
// so.
func ScanTurnLog(ctx context.Context, r io.Reader, m *schemas.RunManifest, o ScanOptions) (runlog.LogRead, error) {
	alloc := o.Allocator
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	var buf []schemas.TurnRecord
	return runlog.ScanRun(ctx, r, runlog.SizeOf(r), m, alloc, func(b arrow.RecordBatch) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if o.Batches != nil {
			if err := o.Batches(b); err != nil {
				return err
			}
		}
		if o.Records == nil {
			return nil
		}
		var err error
		if buf, err = runlog.AppendRecords(buf[:0], b); err != nil {
			return err
		}
		for i := range buf {
			if err := o.Records(&buf[i], TurnExtra{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// ScanEvents reads an open event log (one event a line) once, decoding each line
// once and handing the event to o's Events and, turned into turn records, to
// its Records. Lines the reference's decoder would reject are skipped and
// counted in scan.
func ScanEvents(ctx context.Context, r io.Reader, o ScanOptions, scan *TurnScan) error {
	var et *eventTurns
	if o.Records != nil {
		et = newEventTurns(scan, o)
	}
	all := et != nil
	br := bufio.NewReaderSize(r, 1<<20)
	lineNo := 0
	var long []byte
	for {
		line, err := ReadLine(br, &long)
		if len(line) > 0 {
			lineNo++
			if lineNo&1023 == 0 {
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
			}
			e, ok, why := DecodeEvent(line, all)
			if why != "" {
				at := fmt.Sprintf("line %d: %s", lineNo, why)
				scan.Skipped++
				if scan.FirstSkipped == "" {
					scan.FirstSkipped = at
				}
				if !all || scoredLine(line) {
					scan.ScoringSkipped++
					if scan.FirstScoringSkipped == "" {
						scan.FirstScoringSkipped = at
					}
				}
			}
			if ok && o.Events != nil {
				if herr := o.Events(e, lineNo); herr != nil {
					return herr
				}
			}
			if ok && et != nil {
				if herr := et.handle(e, lineNo); herr != nil {
					return herr
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if et != nil {
		return et.finish()
	}
	return nil
}
