package fakeprovider

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSlowMode_SameKeyGets409WhileInFlightThenTheReplay(t *testing.T) {
	f := newFixture(t, Config{Mode: Mode{Name: ModeSlow, Delay: 5 * time.Second}})
	firstReply := make(chan reply, 1)
	go func() {
		r, err := f.send(context.Background(), f.client, post("key-1", validBody))
		if err != nil {
			r = reply{}
		}
		firstReply <- r
	}()
	require.Equal(t, 5*time.Second, f.gate.awaitWait(t))

	inFlight := f.do(t, post("key-1", validBody))

	p := requireProblem(t, inFlight, http.StatusConflict, msgKeyInFlight)
	require.Equal(t, codeKeyInFlight, p.Code)
	require.Equal(t, "1", inFlight.header.Get("Retry-After"))
	require.Empty(t, f.p.Charges(), "the charge must not exist before the delay")

	f.gate.Open()
	first := <-firstReply
	require.Equal(t, http.StatusCreated, first.status)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))

	replay := f.do(t, post("key-1", validBody))
	require.Equal(t, http.StatusCreated, replay.status)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, replay.body)
	require.Len(t, f.p.Charges(), 1)
}

func TestDropMode_HoldsTheRequestUntilTheClientGivesUp(t *testing.T) {
	f := newFixture(t, Config{Mode: Mode{Name: ModeDrop}})
	impatient := &http.Client{Timeout: 200 * time.Millisecond}

	_, err := f.send(context.Background(), impatient, post("key-1", validBody))

	var urlErr *url.Error
	require.ErrorAs(t, err, &urlErr)
	require.True(t, urlErr.Timeout(), "want a client timeout, got %v", err)
	require.Eventually(t, func() bool { return len(f.p.Requests()) == 1 }, 5*time.Second, time.Millisecond)
	rec := f.p.Requests()[0]
	require.Equal(t, 0, rec.Status)
	require.Equal(t, outcomeDropped, rec.Outcome)
	require.Empty(t, f.p.Charges())
	require.NoError(t, f.p.SetMode(Mode{Name: ModeNormal}))
	require.Equal(t, http.StatusCreated, f.do(t, post("key-1", validBody)).status, "a dropped request must not reserve its key")
}

func TestDropMode_Answers504AfterTheDelay(t *testing.T) {
	f := newFixture(t, Config{Mode: Mode{Name: ModeDrop, Delay: 30 * time.Second}})
	replies := make(chan reply, 1)
	go func() {
		r, _ := f.send(context.Background(), f.client, post("key-1", validBody))
		replies <- r
	}()
	require.Equal(t, 30*time.Second, f.gate.awaitWait(t))

	f.gate.Open()

	p := requireProblem(t, <-replies, http.StatusGatewayTimeout, msgTimeout)
	require.Equal(t, codeTimeout, p.Code)
	require.Empty(t, f.p.Charges())
}

func TestChanceModes_AtRate1RefuseWithoutProcessing(t *testing.T) {
	tests := []struct {
		mode       ModeName
		status     int
		detail     string
		retryAfter string
	}{
		{ModeError, http.StatusServiceUnavailable, msgUnavailable, ""},
		{ModeRateLimit, http.StatusTooManyRequests, msgRateLimited, "1"},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			f := newFixture(t, Config{Mode: Mode{Name: tt.mode, Rate: 1}})

			r := f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1")))

			requireProblem(t, r, tt.status, tt.detail)
			require.Equal(t, tt.retryAfter, r.header.Get("Retry-After"))
			require.Empty(t, f.p.Charges())
			// Nothing was stored under the key: another body is not a 422.
			require.NoError(t, f.p.SetMode(Mode{Name: ModeNormal}))
			require.Equal(t, http.StatusCreated, f.do(t, post("key-1", chargeBody(2000, "tok_visa", "ref-1"))).status)
		})
	}
}

func TestLostResponseMode_ChargesThenClosesTheConnectionAndTheRetryGetsTheReplay(t *testing.T) {
	f := newFixture(t, Config{Mode: Mode{Name: ModeLostResponse, Rate: 1}})
	// Go's Transport silently re-sends a request that carries an
	// Idempotency-Key when a reused connection dies, which would hide the
	// lost response; a fresh connection per request shows it.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

	_, err := f.send(context.Background(), client, post("key-1", validBody))

	require.Error(t, err)
	require.False(t, errors.Is(err, context.DeadlineExceeded))
	charges := f.p.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, ChargeSucceeded, charges[0].Status)
	rec := f.p.Requests()[0]
	require.Equal(t, 0, rec.Status)
	require.Equal(t, outcomeLost, rec.Outcome)
	require.Equal(t, "ch_000001", rec.ChargeID)

	retry, err := f.send(context.Background(), client, post("key-1", validBody))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, retry.status)
	require.Equal(t, "true", retry.header.Get("Idempotent-Replayed"))
	require.Equal(t, "ch_000001", decode[Charge](t, retry).ID)
	require.Len(t, f.p.Charges(), 1)
}

func TestChanceModes_TheSameSeedRepeatsTheSameRun(t *testing.T) {
	f := newFixture(t, Config{Mode: Mode{Name: ModeError, Rate: 0.5, Seed: 42}})
	run := func() []int {
		var statuses []int
		for i := range 32 {
			statuses = append(statuses, f.do(t, post("key-"+strconv.Itoa(i), validBody)).status)
		}
		return statuses
	}

	first := run()
	require.NoError(t, f.p.Reset())
	second := run()

	require.Equal(t, first, second)
	require.Contains(t, first, http.StatusCreated)
	require.Contains(t, first, http.StatusServiceUnavailable)
}

func TestClose_ReleasesDroppedRequestsAndRefusesNewCharges(t *testing.T) {
	f := newFixture(t, Config{})
	require.Equal(t, http.StatusCreated, f.do(t, post("key-1", validBody)).status)
	require.NoError(t, f.p.SetMode(Mode{Name: ModeDrop, Delay: time.Hour}))
	held := make(chan error, 1)
	go func() {
		_, err := f.send(context.Background(), f.client, post("key-2", validBody))
		held <- err
	}()
	f.gate.awaitWait(t)

	require.NoError(t, f.p.Close(context.Background()))

	require.Error(t, <-held, "a dropped request released at shutdown gets no answer")
	require.NoError(t, f.p.SetMode(Mode{Name: ModeNormal}))
	requireProblem(t, f.do(t, post("key-3", validBody)), http.StatusServiceUnavailable, msgShuttingDown)
	replay := f.do(t, post("key-1", validBody))
	require.Equal(t, http.StatusCreated, replay.status, "replays are still served while closing")
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
}
