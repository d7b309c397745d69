package runlog

import (
	"strings"

	"github.com/agentrace/agentrace/schemas"
)

// Issued tells whether a turn was sent to the endpoint: its status is one that
// schemas.Issued counts (ok, error, timeout, cancelled) and it has an issue time.
// This is what "issued" means in every agentrace output (the issued column of
// turns.parquet, the report's n_samples_issued): aborted and not_issued turns were
// never sent.
func Issued(status string, issuedNs int64) bool {
	return issuedNs > 0 && schemas.Issued(status)
}

// Error kinds (ErrorKind), the error_kind column of the analysis table and the
// report's error breakdown.
const (
	ErrHTTP429     = "http_429"           // the server refused: too many requests
	ErrHTTP4xx     = "http_4xx"           // another client error status
	ErrHTTP5xx     = "http_5xx"           // a server error status
	ErrHTTPOther   = "http_other"         // any other non-200 status
	ErrServerError = "server_error"       // an error object in a 200 response or stream
	ErrMalformed   = "malformed_response" // a chunk or body that is not the expected JSON
	ErrOversized   = "oversized_response" // a frame or body past --max-output-bytes
	ErrStreamCut   = "stream_cut"         // the stream ended early or broke
	ErrConnection  = "connection"         // the request never got a response (refused, reset, DNS)
	ErrTimeout     = "timeout"            // status timeout: the turn timeout passed
	ErrCancelled   = "cancelled"          // status cancelled: cut by the client (interrupt, max duration)
	ErrAborted     = "aborted"            // status aborted: skipped after an earlier failure
	ErrNotIssued   = "not_issued"         // status not_issued: issuing had stopped
	ErrOther       = "other"              // an error none of the above
)

// ErrorKind sorts a turn's failure into a small set of kinds from its status, HTTP
// status and error text; "" for a turn that succeeded.
func ErrorKind(status string, httpStatus int32, errText string) string {
	switch status {
	case "ok", "":
		return ""
	case "timeout":
		return ErrTimeout
	case "cancelled":
		return ErrCancelled
	case "aborted":
		return ErrAborted
	case "not_issued":
		return ErrNotIssued
	}
	switch {
	case httpStatus == 429:
		return ErrHTTP429
	case httpStatus >= 400 && httpStatus < 500:
		return ErrHTTP4xx
	case httpStatus >= 500 && httpStatus < 600:
		return ErrHTTP5xx
	case httpStatus != 0 && httpStatus != 200:
		return ErrHTTPOther
	}
	e := strings.ToLower(errText)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(e, s) {
				return true
			}
		}
		return false
	}
	switch {
	case strings.HasPrefix(e, "http 429"):
		return ErrHTTP429
	case strings.HasPrefix(e, "http 4"):
		return ErrHTTP4xx
	case strings.HasPrefix(e, "http 5"):
		return ErrHTTP5xx
	case has("server error in stream", "server error in response", "error_frame"):
		return ErrServerError
	case has("frame too large"):
		return ErrOversized
	case has("malformed", "invalid json"):
		return ErrMalformed
	case has("stream ended", "unexpected eof", "read stream", "read response"):
		return ErrStreamCut
	case has("connection refused", "connection reset", "broken pipe", "no such host", "dial ", "eof", "network is unreachable", "tls"):
		return ErrConnection
	}
	return ErrOther
}
