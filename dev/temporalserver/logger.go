package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts slog to the Temporal server's logging interface.
type serverLogger struct{ l *slog.Logger }

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

func (s serverLogger) Debug(msg string, tags ...tag.Tag) { s.log(slog.LevelDebug, msg, tags) }
func (s serverLogger) Info(msg string, tags ...tag.Tag)  { s.log(slog.LevelInfo, msg, tags) }
func (s serverLogger) Warn(msg string, tags ...tag.Tag)  { s.log(slog.LevelWarn, msg, tags) }
func (s serverLogger) Error(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

// DPanic panics only in the server's own development builds; here it is an
// error.
func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}

// Fatal would exit the process, taking the embedding program with it. It
// panics with a fatalError instead, which Start turns back into an error when
// it happens during startup (a port taken at the last moment, say).
func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(fatalError{msg: msg, tags: tags})
}

func (s serverLogger) With(tags ...tag.Tag) log.Logger {
	return serverLogger{s.l.With(attrsOf(tags)...)}
}

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	s.l.Log(ctx, level, msg, attrsOf(tags)...)
}

func attrsOf(tags []tag.Tag) []any {
	attrs := make([]any, len(tags))
	for i, t := range tags {
		attrs[i] = slog.Any(t.Key(), t.Value())
	}
	return attrs
}

// fatalError is what the server reported as fatal.
type fatalError struct {
	msg  string
	tags []tag.Tag
}

func (e fatalError) Error() string {
	var b strings.Builder
	b.WriteString("temporalserver: fatal: ")
	b.WriteString(e.msg)
	for _, t := range e.tags {
		fmt.Fprintf(&b, " %s=%v", t.Key(), t.Value())
	}
	return b.String()
}

// addressInUse reports whether the server failed to bind an address that
// was taken. It reads the error tag's field, where the error itself is kept:
// Value renders it as text.
func (e fatalError) addressInUse() bool {
	for _, t := range e.tags {
		zt, ok := t.(tag.ZapTag)
		if !ok {
			continue
		}
		if err, ok := zt.Field().Interface.(error); ok && errors.Is(err, syscall.EADDRINUSE) {
			return true
		}
	}
	return false
}

// catchFatal runs fn and returns a fatal report from the server, raised on
// this goroutine, as an error. Other panics go on unwinding.
func catchFatal(fn func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fe, ok := r.(fatalError)
		if !ok {
			panic(r)
		}
		err = fe
	}()
	return fn()
}
