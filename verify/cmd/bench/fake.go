package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"chargeonce/fakeprovider"
)

// chargeBody is a valid charge request; every request of the fake-provider
// rows sends it, under a new or a repeated key.
const chargeBody = `{"amount":54890,"currency":"TRY","description":"bench order","merchant_reference":"bench-1-0190a0b0c0d07e0f8a0b0c0d0e0f1a2b","source":"tok_visa"}`

// noopBody is about the size of the fake provider's charge object.
var noopBody = []byte(`{"id":"ch_000001","object":"charge","amount":54890,"currency":"TRY","status":"succeeded","description":"bench order","merchant_reference":"bench-1-0190a0b0c0d07e0f8a0b0c0d0e0f1a2b","idempotency_key":"k","created":"2026-01-01T00:00:00Z"}`)

// noopHandler reads the request and answers a fixed charge object: the
// cost of net/http alone.
func noopHandler(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(noopBody)
}

// loopbackServer serves h on a free loopback port.
type loopbackServer struct {
	srv *http.Server
	url string
}

func serveLoopback(h http.Handler) (*loopbackServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &loopbackServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, url: "http://" + ln.Addr().String()}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *loopbackServer) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// fakeProvider measures POST /v1/charges of a fresh fake provider, with new
// keys and with replays of one key, against a no-op handler, all over
// loopback HTTP with a keep-alive pool of the same size as the concurrency.
func (b *bench) fakeProvider(ctx context.Context, _ []system) error {
	fake, err := fakeprovider.New(fakeprovider.Config{})
	if err != nil {
		return err
	}
	fakeSrv, err := serveLoopback(fake)
	if err != nil {
		return err
	}
	noopSrv, err := serveLoopback(http.HandlerFunc(noopHandler))
	if err != nil {
		return errors.Join(err, fakeSrv.shutdown())
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := errors.Join(fake.Close(closeCtx), fakeSrv.shutdown(), noopSrv.shutdown()); err != nil {
			b.progress.Warn("fake provider benchmark servers did not stop cleanly", "error", err)
		}
	}()
	transport := &http.Transport{MaxIdleConnsPerHost: fakeConcurrency, MaxConnsPerHost: fakeConcurrency, IdleConnTimeout: 30 * time.Second}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	d := min(b.o.phase, 4*time.Second)

	post := func(url string, key func(int) string) op {
		return func(ctx context.Context, i int) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/charges", strings.NewReader(chargeBody))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", `"`+key(i)+`"`)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusCreated {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		}
	}
	newKey := func(i int) string { return "bench-new-" + strconv.Itoa(i) }
	sameKey := func(int) string { return "bench-replay" }
	if err := post(fakeSrv.url, sameKey)(ctx, 0); err != nil {
		return fmt.Errorf("first charge of the replayed key: %w", err)
	}

	measure := func(name string, run op) (float64, error) {
		b.progress.Info("fake provider", "case", name, "concurrency", fakeConcurrency)
		p := closedLoop(ctx, fakeConcurrency, math.MaxInt, d, run)
		if p.failed > 0 {
			return 0, fmt.Errorf("%s: %d requests failed: %w", name, p.failed, p.firstErr)
		}
		return p.throughput(), nil
	}
	noop, err := measure("no-op handler", post(noopSrv.url, newKey))
	if err != nil {
		return err
	}
	fresh, err := measure("new keys", post(fakeSrv.url, newKey))
	if err != nil {
		return err
	}
	replay, err := measure("replays", post(fakeSrv.url, sameKey))
	if err != nil {
		return err
	}
	note := fmt.Sprintf("loopback HTTP/1.1, %d concurrent clients, keep-alive pool of %d, %s per case", fakeConcurrency, fakeConcurrency, d)
	b.rep.add(Row{Section: "provider", Metric: "fake POST /v1/charges, new keys", Unit: "req/s", Value: fresh,
		Refs: []Ref{{Name: "no-op handler", Value: noop}}, Note: note})
	b.rep.add(Row{Section: "provider", Metric: "fake POST /v1/charges, replays", Unit: "req/s", Value: replay,
		Refs: []Ref{{Name: "no-op handler", Value: noop}}})
	return nil
}
