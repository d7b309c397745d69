package ingest

import (
	"context"
	"fmt"
	"io"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/notice"
)

// PromptOptions selects a client turn and the settings its request is built with;
// they mirror replay's flags, so the body printed is the body replay sends.
type PromptOptions struct {
	Dataset      string
	Conversation string
	Turn         int
	Repeat       int
	NoSalt       bool
	Model        string
	Profile      string
	// Sampling sets sampling parameters over the profile's (replay.Options.Sampling).
	Sampling    datasets.Profile
	NoStream    bool
	StreamUsage bool
	MaxTokens   int
	// ClearGeneratedCache applies datasets.BodyOptions.ClearGeneratedCache.
	ClearGeneratedCache bool
	// Verbose prints the request headers before the body; APIKey says whether a key
	// would be sent (it is printed redacted).
	Verbose bool
	APIKey  bool
	// RoutingHeaders carry the session id (default X-Session-ID).
	RoutingHeaders []string
}

// Prompt writes the exact JSON request body replay sends for one client turn,
// followed by a newline; with Verbose, the request headers come first.
func Prompt(ctx context.Context, w io.Writer, o PromptOptions) error {
	d, err := datasets.Open(ctx, o.Dataset)
	if err != nil {
		return err
	}
	t, err := d.Turn(o.Conversation, o.Turn)
	if err != nil {
		return err
	}
	bo := datasets.BodyOptions{
		Model: o.Model, Salt: !o.NoSalt, Repeat: max(o.Repeat, 1),
		Stream: !o.NoStream, IncludeUsage: o.StreamUsage && !o.NoStream, MaxTokens: o.MaxTokens,
		ClearGeneratedCache: o.ClearGeneratedCache,
	}
	if bo.Profile, err = datasets.RunProfile(o.Profile, o.Sampling); err != nil {
		return err
	}
	if bo.Salt {
		c, _ := d.Conversation(o.Conversation)
		if !c.HasSystem {
			return notice.Errorf("no-salt", "prompt for conversation %q: salting is on (it can be turned off): %w", o.Conversation, datasets.ErrNoSystemPrompt)
		}
	}
	body := d.AppendBody(nil, t, bo)
	if o.Verbose {
		// Streamed or not as the body's stream value says, as replay sends it.
		accept := "application/json"
		if d.Streams(t, bo) {
			accept = "text/event-stream"
		}
		fmt.Fprintf(w, "POST /v1/chat/completions\nContent-Type: application/json\nAccept: %s\n", accept)
		if o.APIKey {
			fmt.Fprintln(w, "Authorization: Bearer <redacted>")
		}
		hs := o.RoutingHeaders
		if len(hs) == 0 {
			hs = []string{"X-Session-ID"}
		}
		for _, h := range hs {
			fmt.Fprintf(w, "%s: %s\n", h, datasets.SessionID(o.Conversation, max(o.Repeat, 1)))
		}
		fmt.Fprintf(w, "Content-Length: %d\n\n", len(body))
	}
	body = append(body, '\n')
	_, err = w.Write(body)
	return err
}
