// Package logging builds the slog loggers of chargeonce's processes.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// New returns a logger that writes to w in format "text" or "json" at the
// given level ("debug", "info", "warn" or "error").
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log format %q: use text or json", format)
	}
}

// Discard returns a logger that writes nothing.
func Discard() *slog.Logger {
	return slog.New(slog.DiscardHandler)
}

// AtLeast passes on only records at min or above. Temporal's SDK and server
// log every poll and task at info level, which would bury the payment story
// in the same output.
//
// A logger derived from the result with With(Own()) passes every record that
// l passes: the payment story that the workflows write through the SDK's
// logger must not be held to the SDK's floor.
//
// min may be a *slog.LevelVar, so that a part can be quieted while it stops.
func AtLeast(l *slog.Logger, min slog.Leveler) *slog.Logger {
	return slog.New(levelFilter{l.Handler(), min})
}

// Own is the attribute that exempts a logger derived from an AtLeast logger
// from its floor. The attribute itself is not written. Its value's type is
// unexported, so that no attribute of the SDK can be taken for it.
func Own() slog.Attr {
	return slog.Any("own", own{})
}

type own struct{}

func isOwn(a slog.Attr) bool {
	_, ok := a.Value.Any().(own)
	return ok
}

type levelFilter struct {
	slog.Handler
	min slog.Leveler
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min.Level() && f.Handler.Enabled(ctx, l)
}

func (f levelFilter) WithAttrs(as []slog.Attr) slog.Handler {
	if rest := slices.DeleteFunc(slices.Clone(as), isOwn); len(rest) < len(as) {
		if len(rest) == 0 {
			return f.Handler
		}
		return f.Handler.WithAttrs(rest)
	}
	return levelFilter{f.Handler.WithAttrs(as), f.min}
}

func (f levelFilter) WithGroup(name string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(name), f.min}
}
