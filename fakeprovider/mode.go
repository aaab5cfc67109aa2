package fakeprovider

import (
	"encoding/json"
	"fmt"
	"time"

	"chargeonce/internal/strictjson"
)

// ModeName names a chaos mode.
type ModeName string

// The chaos modes. Only the requests that make something misbehave (charges
// and refunds, in either dialect); lookups and the admin API always answer,
// so a test can inspect the damage a mode has done.
const (
	// ModeNormal processes every charge at once.
	ModeNormal ModeName = "normal"
	// ModeSlow processes every new charge or refund for Mode.Delay before
	// it exists. Requests for the same key meanwhile get 409.
	ModeSlow ModeName = "slow"
	// ModeDrop loses every request: nothing is processed and the connection is
	// held until the client gives up, or answered 504 after Mode.Delay when it
	// is positive.
	ModeDrop ModeName = "drop"
	// ModeError answers 503 without processing, with probability Mode.Rate.
	ModeError ModeName = "error"
	// ModeLostResponse processes a new charge or refund and stores its
	// result, then closes the connection without an answer, with
	// probability Mode.Rate.
	// Replays of a stored result are always answered, so a client that retries
	// with the same key learns the outcome.
	ModeLostResponse ModeName = "lost_response"
	// ModeRateLimit answers 429 with Retry-After, with probability Mode.Rate.
	ModeRateLimit ModeName = "rate_limit"
)

// DefaultRate is the Rate that the commands' flags start from: every
// request misbehaves, so that a chaos mode chosen on the command line shows
// itself at once.
const DefaultRate = 1.0

// Mode is the provider's chaos mode and its parameters.
type Mode struct {
	// Name selects the behaviour.
	Name ModeName
	// Delay is the processing time in ModeSlow, and the time before a 504 in
	// ModeDrop (zero holds the request until the client gives up).
	Delay time.Duration
	// Rate is the probability, from 0 to 1, that a request misbehaves in
	// ModeError, ModeLostResponse and ModeRateLimit.
	Rate float64
	// Seed seeds the random source behind Rate, so a run can be repeated.
	Seed uint64
}

// Validate reports the first problem that makes m unusable.
func (m Mode) Validate() error {
	switch m.Name {
	case ModeNormal, ModeSlow, ModeDrop, ModeError, ModeLostResponse, ModeRateLimit:
	default:
		return fmt.Errorf("unknown mode %q: want normal, slow, drop, error, lost_response or rate_limit", m.Name)
	}
	if m.Delay < 0 {
		return fmt.Errorf("delay must not be negative, got %s", m.Delay)
	}
	if m.Name == ModeSlow && m.Delay == 0 {
		return fmt.Errorf("mode slow needs a delay greater than 0")
	}
	// Written as a negated range so that NaN is refused too.
	if !(m.Rate >= 0 && m.Rate <= 1) {
		return fmt.Errorf("rate must be between 0 and 1, got %v", m.Rate)
	}
	if m.usesRate() && m.Rate == 0 {
		return fmt.Errorf("mode %s needs a rate greater than 0", m.Name)
	}
	return nil
}

func (m Mode) usesRate() bool {
	return m.Name == ModeError || m.Name == ModeLostResponse || m.Name == ModeRateLimit
}

// modeJSON is the wire form of Mode: the delay travels as a Go duration
// string ("5s") so that people can write it by hand.
type modeJSON struct {
	Mode  ModeName `json:"mode"`
	Delay string   `json:"delay"`
	Rate  float64  `json:"rate"`
	Seed  uint64   `json:"seed"`
}

// MarshalJSON encodes m as {"mode", "delay", "rate", "seed"}.
func (m Mode) MarshalJSON() ([]byte, error) {
	return json.Marshal(modeJSON{Mode: m.Name, Delay: m.Delay.String(), Rate: m.Rate, Seed: m.Seed})
}

// UnmarshalJSON decodes {"mode", "delay", "rate", "seed"} and refuses unknown
// fields. It does not validate; call Validate.
func (m *Mode) UnmarshalJSON(b []byte) error {
	var w modeJSON
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var delay time.Duration
	if w.Delay != "" {
		d, err := time.ParseDuration(w.Delay)
		if err != nil {
			return fmt.Errorf("delay must be a duration such as 5s, got %q", w.Delay)
		}
		delay = d
	}
	*m = Mode{Name: w.Mode, Delay: delay, Rate: w.Rate, Seed: w.Seed}
	return nil
}
