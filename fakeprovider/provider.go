// Package fakeprovider is a card payment provider that speaks the provider
// HTTP contract (docs/provider-http.md): POST /v1/charges and POST
// /v1/refunds guarded by an Idempotency-Key, lookups by id and by merchant
// reference, refunds that succeed, wait pending or fail after succeeding,
// holds (authorizations captured or voided later, or expired), and
// published limits: the key retention, the rate of lookups it serves and
// the hold window. It keeps its state in memory, and optionally also in a
// SQLite file that a restart reads back (Config.DataFile).
//
// It speaks Stripe's dialect too, over the same state: POST
// /v1/payment_intents (form-encoded, confirmed at once, under a plain
// Idempotency-Key), GET /v1/payment_intents/search by
// metadata['merchant_reference'], GET /v1/payment_intents/{id}, and POST
// and GET /v1/refunds of a PaymentIntent, the capture and cancel of one
// created with capture_method manual, with Stripe's error objects and
// statuses. Stripe's test payment methods pm_card_<name> behave as the test
// tokens tok_<name>.
//
// On demand it misbehaves the way real providers do (slow processing,
// dropped requests, errors, lost responses, rate limits), so that clients can
// be tested against the cases that cause double charges. Its state and chaos
// mode can be read and changed through Go methods or the HTTP admin API under
// /_admin/.
package fakeprovider

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultRetention is how long a key is remembered when Config.Retention is
// zero.
const DefaultRetention = 24 * time.Hour

// DefaultLookupRate is how many lookups by merchant reference a second the
// provider serves when Config.LookupRate is zero: far below what the dev
// stack can serve, and far above what its reconciliation asks for.
const DefaultLookupRate = 50

// DefaultHoldWindow is how long an authorization waits for its capture
// when Config.HoldWindow is zero: seven days, as card networks commonly
// keep one.
const DefaultHoldWindow = 7 * 24 * time.Hour

// Config configures a Provider. The zero value is usable: normal mode, 24h
// retention, 50 lookups a second, the real clock, no logs, state in memory
// only.
type Config struct {
	// Mode is the initial chaos mode. A zero Mode means the mode DataFile
	// holds, or ModeNormal when there is none; any other Mode replaces the
	// one in DataFile.
	Mode Mode
	// Retention is how long a finished key is remembered; zero means
	// DefaultRetention. It is published, in whole seconds, by
	// GET /v1/idempotency.
	Retention time.Duration
	// LookupRate is how many lookups by merchant reference
	// (GET /v1/charges?merchant_reference=…) the provider serves a second,
	// with a burst of one second's worth; past it, a lookup is answered 429
	// with Retry-After. Zero means DefaultLookupRate; there is no unlimited
	// rate, as no real provider has one. It is published by
	// GET /v1/idempotency.
	LookupRate float64
	// HoldWindow is how long an authorization (a charge posted with
	// capture false) can be captured or voided before it expires; zero
	// means DefaultHoldWindow. It is published, in whole seconds, by
	// GET /v1/idempotency.
	HoldWindow time.Duration
	// Now reads the clock used for charge times, request times and key ages.
	// Nil means time.Now. Tests advance a fake clock to expire keys.
	Now func() time.Time
	// After waits in the slow and drop modes. Nil means time.After. Tests
	// pass a channel they control.
	After func(time.Duration) <-chan time.Time
	// Logger receives one line per request. Nil discards.
	Logger *slog.Logger
	// DataFile, when set, is a SQLite file, created if missing, that keeps
	// the keys with their stored responses, the charges, the request log and
	// the mode across restarts. Every change is written to it before it is
	// answered. Empty keeps the state in memory only. See CloseDataFile.
	DataFile string
	// Fee is the fee rule of the settlement reports; the zero rule charges
	// no fee.
	Fee FeeRule
	// Webhooks configures the events sent when a charge finishes or a
	// refund settles; the zero value sends none. Events waiting for delivery are kept in memory
	// only, also with a DataFile.
	Webhooks WebhookConfig
	// IDTag names this provider in the ids of the charges and refunds it
	// makes (ch_backup_000001 for "backup"), so that two fakes never make
	// the same id, as two real providers never do. Empty makes ch_000001.
	// At most 16 lowercase letters and digits.
	IDTag string
}

// validIDTag is the form of Config.IDTag.
var validIDTag = regexp.MustCompile(`^[a-z0-9]{0,16}$`)

func (c Config) withDefaults() Config {
	if c.Mode.Name == "" {
		c.Mode.Name = ModeNormal
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.LookupRate == 0 {
		c.LookupRate = DefaultLookupRate
	}
	if c.HoldWindow == 0 {
		c.HoldWindow = DefaultHoldWindow
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.After == nil {
		c.After = time.After
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Validate reports the first problem that makes c unusable.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.Mode.Validate(); err != nil {
		return err
	}
	if c.Retention < time.Second {
		return fmt.Errorf("retention must be at least 1s, got %s", c.Retention)
	}
	if !(c.LookupRate > 0) || math.IsInf(c.LookupRate, 1) {
		return fmt.Errorf("lookup rate must be a positive number of lookups a second, got %v", c.LookupRate)
	}
	if c.HoldWindow < time.Second {
		return fmt.Errorf("hold window must be at least 1s, got %s", c.HoldWindow)
	}
	// SQLite would read what follows them as connection parameters.
	if strings.ContainsAny(c.DataFile, "?#") {
		return fmt.Errorf("data file %q: the path must not contain ? or #", c.DataFile)
	}
	if err := c.Fee.Validate(); err != nil {
		return err
	}
	if !validIDTag.MatchString(c.IDTag) {
		return fmt.Errorf("id tag %q: want at most 16 lowercase letters and digits", c.IDTag)
	}
	return c.Webhooks.Validate()
}

// Provider is the fake provider: an http.Handler and the state behind it. It
// is safe for concurrent use.
type Provider struct {
	now       func() time.Time
	after     func(time.Duration) <-chan time.Time
	retention time.Duration
	// holdWindow is how long an authorization lasts.
	holdWindow time.Duration
	// idTag is Config.IDTag.
	idTag string
	// lookups paces the lookups by merchant reference; it is safe for
	// concurrent use on its own.
	lookups *rate.Limiter
	log     *slog.Logger
	mux     *http.ServeMux
	// file is nil when the state is in memory only. Every use holds mu.
	file *dataFile
	fee  FeeRule
	// webhooks delivers the events of finished charges.
	webhooks *webhooks

	// closed is closed by Close to release requests held by ModeDrop.
	closed chan struct{}

	mu       sync.Mutex
	mode     Mode
	rng      *rand.Rand
	keys     map[string]*keyEntry
	charges  []Charge
	byID     map[string]int
	byRef    map[string][]int
	requests []RequestRecord
	// holds keeps, by charge id, what a hold's charge object does not
	// show about its capture or cancellation.
	holds map[string]holdEntry
	// authorized indexes the charges still authorized, which expire
	// lazily: see expireHoldsLocked.
	authorized map[string]int
	// refunds are indexed by id, by merchant reference and by charge.
	refunds         []refundEntry
	refundByID      map[string]int
	refundsByRef    map[string][]int
	refundsByCharge map[string][]int
	// refundsHeld keeps new refunds pending until SettleRefund.
	refundsHeld bool
	// alterations change the settlement reports, by charge id.
	alterations map[string][]Alteration
	closing     bool
	// working counts charges being processed; idle is closed whenever it
	// drops to zero, and replaced when it rises from zero.
	working int
	idle    chan struct{}
}

// New returns a Provider configured by cfg, or the error from cfg.Validate,
// or why cfg.DataFile cannot be used.
func New(cfg Config) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keepFileMode := cfg.Mode == Mode{}
	cfg = cfg.withDefaults()
	p := &Provider{
		now:        cfg.Now,
		after:      cfg.After,
		retention:  cfg.Retention,
		holdWindow: cfg.HoldWindow,
		idTag:      cfg.IDTag,
		lookups:    rate.NewLimiter(rate.Limit(cfg.LookupRate), int(min(math.Ceil(cfg.LookupRate), math.MaxInt32))),
		log:        cfg.Logger,
		fee:        cfg.Fee,
		closed:     make(chan struct{}),
		mode:       cfg.Mode,
		rng:        newRand(cfg.Mode.Seed),
		idle:       closedChan(),
	}
	p.resetLocked()
	if cfg.DataFile != "" {
		if err := p.openDataFile(cfg.DataFile, keepFileMode); err != nil {
			return nil, err
		}
	}
	p.mux = p.routes()
	p.webhooks = newWebhooks(cfg.Webhooks, cfg.Logger)
	return p, nil
}

// newID is the id of the seq-th object of a kind, whose ids start with
// prefix (ch_, pi_, re_), tagged with the provider's IDTag.
func (p *Provider) newID(prefix string, seq int) string {
	if p.idTag != "" {
		prefix += p.idTag + "_"
	}
	return fmt.Sprintf("%s%06d", prefix, seq)
}

// openDataFile reads the state saved in path and keeps writing to it. The
// random source starts again from the seed, as after SetMode.
func (p *Provider) openDataFile(path string, keepFileMode bool) error {
	f, state, err := openDataFile(path)
	if err != nil {
		return err
	}
	if keepFileMode && state.mode != nil {
		p.mode = *state.mode
		p.rng = newRand(p.mode.Seed)
	}
	// Writing the mode, even the one just read, takes the file's write lock
	// now: a second provider on the file fails here, not at its first charge.
	if err := f.saveMode(p.mode); err != nil {
		_ = f.close()
		return dataFileError(path, err)
	}
	p.file = f
	p.keys = state.keys
	for _, c := range state.charges {
		p.addChargeLocked(c)
	}
	for _, r := range state.refunds {
		p.addRefundLocked(r)
	}
	for _, h := range state.holds {
		p.holds[h.ChargeID] = h
	}
	p.requests = state.requests
	p.log.Info("data file opened", "file", path, "charges", len(p.charges), "refunds", len(p.refunds), "keys", len(p.keys), "requests", len(p.requests))
	return nil
}

// CloseDataFile closes the data file; without one it does nothing. Call it
// last, after the HTTP server has stopped, so that the requests the server
// was finishing are recorded. Every later change fails, and a new charge is
// answered 503 without being made.
func (p *Provider) CloseDataFile() error {
	if p.file == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.file.close()
}

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed))
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// ServeHTTP serves the provider API and the admin API.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mux.ServeHTTP(w, r)
}

// Mode returns the current chaos mode.
func (p *Provider) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches to m and reseeds the random source with m.Seed. An invalid
// mode, or one the data file cannot store, is refused and nothing changes.
func (p *Provider) SetMode(m Mode) error {
	if err := m.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file != nil {
		if err := p.file.saveMode(m); err != nil {
			return fmt.Errorf("save mode: %w", err)
		}
	}
	p.mode = m
	p.rng = newRand(m.Seed)
	return nil
}

// chance draws from the seeded source: true with probability rate.
func (p *Provider) chance(rate float64) bool {
	return p.rng.Float64() < rate
}

// Retention returns how long a finished key is remembered.
func (p *Provider) Retention() time.Duration {
	return p.retention
}

// LookupRate returns how many lookups by merchant reference the provider
// serves a second.
func (p *Provider) LookupRate() float64 {
	return float64(p.lookups.Limit())
}

// Charges returns every charge, oldest first, holds past their
// capture_before expired.
func (p *Provider) Charges() []Charge {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireHoldsLocked()
	return append([]Charge(nil), p.charges...)
}

// Requests returns every request received by the provider API (not the admin
// API), in the order they finished.
func (p *Provider) Requests() []RequestRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]RequestRecord(nil), p.requests...)
}

// ChargeRequests returns the requests that posted a charge, in either
// dialect, in the order they finished.
func (p *Provider) ChargeRequests() []RequestRecord {
	var out []RequestRecord
	for _, r := range p.Requests() {
		if r.IsCharge() {
			out = append(out, r)
		}
	}
	return out
}

// Reset forgets every charge, every finished key and every recorded request,
// and reseeds the random source from the current mode's seed. The mode is
// kept. Charges still being processed are not forgotten: they complete and
// become the first charges of the fresh state, and their keys stay reserved.
// When the data file cannot be cleared, nothing changes.
func (p *Provider) Reset() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file != nil {
		if err := p.file.reset(); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
	}
	p.resetLocked()
	p.rng = newRand(p.mode.Seed)
	p.webhooks.forgetDeliveries()
	return nil
}

func (p *Provider) resetLocked() {
	keys := make(map[string]*keyEntry)
	for k, e := range p.keys {
		if e.resp == nil {
			keys[k] = e
		}
	}
	p.keys = keys
	p.charges = nil
	p.byID = make(map[string]int)
	p.byRef = make(map[string][]int)
	p.holds = make(map[string]holdEntry)
	p.authorized = make(map[string]int)
	p.refunds = nil
	p.refundByID = make(map[string]int)
	p.refundsByRef = make(map[string][]int)
	p.refundsByCharge = make(map[string][]int)
	p.requests = nil
	p.alterations = make(map[string][]Alteration)
}

// ExpireKeys forgets every finished key that was first seen at least
// olderThan ago and returns how many it forgot; olderThan ≤ 0 forgets them
// all. Keys still being processed are kept, since forgetting one would let a
// duplicate through while the first charge is being made. When the data file
// cannot forget them, nothing changes.
func (p *Provider) ExpireKeys(olderThan time.Duration) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var expired []string
	for k, e := range p.keys {
		if e.resp != nil && now.Sub(e.firstSeen) >= olderThan {
			expired = append(expired, k)
		}
	}
	if p.file != nil && len(expired) > 0 {
		if err := p.file.forgetKeys(expired); err != nil {
			return 0, fmt.Errorf("expire keys: %w", err)
		}
	}
	for _, k := range expired {
		delete(p.keys, k)
	}
	return len(expired), nil
}

// Wait blocks until no charge is being processed, or ctx is done.
func (p *Provider) Wait(ctx context.Context) error {
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for charges in progress: %w", ctx.Err())
	}
}

// Close stops accepting new charges (they get 503; replays are still served),
// releases requests held by ModeDrop by closing their connections, waits
// until the charges in progress are stored or ctx is done, and then stops
// the webhook deliveries, those in flight too. Call it before
// http.Server.Shutdown, so that held requests do not keep Shutdown waiting.
func (p *Provider) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closing {
		p.closing = true
		close(p.closed)
	}
	p.mu.Unlock()
	err := p.Wait(ctx)
	p.webhooks.close()
	return err
}

// startWorkLocked records that a charge is being processed.
func (p *Provider) startWorkLocked() {
	if p.working == 0 {
		p.idle = make(chan struct{})
	}
	p.working++
}

// finishWorkLocked records that a charge has been stored.
func (p *Provider) finishWorkLocked() {
	p.working--
	if p.working == 0 {
		close(p.idle)
	}
}
