package chargeonce

import "time"

// ProviderRequest is one HTTP exchange with the provider, as recorded in the
// request log of an attempt. The checkout shows these as the attempt's
// timeline ("timeout after 3.0s", "409 in flight", "201 replayed").
type ProviderRequest struct {
	// Key is the idempotency key the request carried.
	Key string `json:"key"`
	// At is when the request was sent.
	At time.Time `json:"at"`
	// StatusCode is the HTTP status, or 0 when no response arrived.
	StatusCode int `json:"statusCode"`
	// Outcome is how the response was read: approved, declined, in_flight,
	// timeout and so on.
	Outcome string `json:"outcome"`
	// Replayed reports whether the provider said it replayed a stored response.
	Replayed bool `json:"replayed"`
	// Duration is how long the exchange took.
	Duration time.Duration `json:"duration"`
}

// RequestUnanswered is the Outcome of a request that went out and has no
// answer written: one still in flight, or one lost with a worker that
// stopped while it was. Every request is listed so before it is sent, so
// that such a request is never forgotten: it may have been processed.
const RequestUnanswered = "unanswered"
