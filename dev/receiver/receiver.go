// Package receiver is the dev stack's stand-in for a merchant's backend: an
// endpoint for chargeonce's signed events that verifies each one as a
// merchant must (Standard Webhooks, internal/webhook) and prints one line
// per event, so that a newcomer sees an order's events arrive as its
// payment settles.
package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"chargeonce/api/wire"
	"chargeonce/internal/webhook"
)

// Path is where the receiver takes events.
const Path = "/events"

// maxBody caps an event's body; chargeonce's are under 1 KiB.
const maxBody = 64 << 10

// secretsTimeout bounds the lookup of the endpoint's secrets per event.
const secretsTimeout = 2 * time.Second

// Config configures a receiver.
type Config struct {
	// Secrets returns the endpoint's live signing secrets. It is called
	// per event, so that a rotation through the API takes effect at once.
	Secrets func(context.Context) ([]webhook.Secret, error)
	// Out takes one line per event.
	Out io.Writer
}

// Handler verifies the events posted to Path and prints them. It answers
// 204 to a verified event, 401 to a bad signature and 400 to a body that is
// not an event, so that the dispatcher retries only what a merchant's
// receiver would refuse.
type Handler struct {
	cfg Config
	// mu serializes the lines and guards seen.
	mu sync.Mutex
	// seen holds the ids of the events already printed, so that a retry
	// of one is marked as such, as a merchant's dedup would drop it.
	seen map[string]bool
}

// New returns the receiver's handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Secrets == nil || cfg.Out == nil {
		return nil, errors.New("receiver: config: Secrets and Out are required")
	}
	return &Handler{cfg: cfg, seen: map[string]bool{}}, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path || r.Method != http.MethodPost {
		http.Error(w, "events are POSTed to "+Path, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		h.printf("event refused: the body could not be read: %v", err)
		http.Error(w, "the body could not be read", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), secretsTimeout)
	secrets, err := h.cfg.Secrets(ctx)
	cancel()
	if err != nil {
		h.printf("event not checked: the endpoint's secret could not be read: %v", err)
		http.Error(w, "the secret could not be read", http.StatusServiceUnavailable)
		return
	}
	if _, err := webhook.NewVerifier(secrets, nil).Verify(r.Header, body); err != nil {
		h.printf("event refused: %v (webhook-id %q)", err, r.Header.Get(webhook.HeaderID))
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var e wire.Event
	if err := json.Unmarshal(body, &e); err != nil {
		h.printf("event refused: the body is not an event: %v", err)
		http.Error(w, "the body is not an event", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	again := ""
	if h.seen[e.ID] {
		again = " (again: a retry or a replay)"
	}
	h.seen[e.ID] = true
	h.mu.Unlock()
	h.printf("event %s order=%d seq=%d status=%s %s%s", e.Type, e.Data.OrderID, e.Data.Sequence, e.Data.OrderStatus, e.ID, again)
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) printf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(h.cfg.Out, format+"\n", args...)
}
