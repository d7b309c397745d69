// Package notice holds what a stage has to say besides its result, as values: the
// notes, warnings and progress it hands to its caller's Sink (Event), and the
// errors that concern one of its caller's options (OptionError). A stage never
// words them for a terminal: cmd/agentrace prints them, each in the one format of
// its messages, and names the command-line flag that an Option stands for.
package notice

import (
	"fmt"
	"slices"
	"sync"
)

// Kind is what an Event is.
type Kind uint8

// The kinds of Event.
const (
	// Note: something the caller should know that is not wrong (a secret kept
	// secret, an interrupt being honoured).
	Note Kind = iota + 1
	// Warning: something is off and the stage went on (a figure left out, an
	// input line tolerated).
	Warning
	// Progress: how far the stage has come ("point 2 of 5").
	Progress
)

// Event is one thing a stage says while it works.
type Event struct {
	Kind Kind
	// Text reads well on its own, without the option's name.
	Text string
	// Option is the key of the option the event concerns ("max-duration"), or
	// "": the caller names it the way its user gave it.
	Option string
}

// Sink receives a stage's events, in order, on the stage's goroutines one at a
// time; a nil Sink drops them.
type Sink func(Event)

// Say hands the sink an event of kind about option ("" for none), its text
// formatted as fmt.Sprintf does.
func (s Sink) Say(kind Kind, option, format string, a ...any) {
	if s != nil {
		s(Event{Kind: kind, Text: fmt.Sprintf(format, a...), Option: option})
	}
}

// Serial is s for a stage that says things from several goroutines at once:
// it hands s one event at a time. nil stays nil.
func (s Sink) Serial() Sink {
	if s == nil {
		return nil
	}
	var mu sync.Mutex
	return func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		s(e)
	}
}

// OptionError is an error that concerns one of the caller's options: Option is
// its key ("tokenizer"), Err says what is wrong, reading well without it.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Err.Error() }

func (e *OptionError) Unwrap() error { return e.Err }

// Errorf is an OptionError about option, its error formatted as fmt.Errorf does.
func Errorf(option, format string, a ...any) error {
	return &OptionError{Option: option, Err: fmt.Errorf(format, a...)}
}

// About marks err as concerning each of options, in order: an OptionError for
// each around err.
func About(err error, options ...string) error {
	for i := len(options) - 1; i >= 0; i-- {
		err = &OptionError{Option: options[i], Err: err}
	}
	return err
}

// Options lists the options that err and the errors it wraps concern, each once,
// outermost first.
func Options(err error) []string {
	var keys []string
	var walk func(error)
	walk = func(err error) {
		for err != nil {
			if oe, ok := err.(*OptionError); ok && !slices.Contains(keys, oe.Option) {
				keys = append(keys, oe.Option)
			}
			switch u := err.(type) {
			case interface{ Unwrap() []error }:
				for _, e := range u.Unwrap() {
					walk(e)
				}
				return
			case interface{ Unwrap() error }:
				err = u.Unwrap()
			default:
				return
			}
		}
	}
	walk(err)
	return keys
}
