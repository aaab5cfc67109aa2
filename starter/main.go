// Command starter is a client of the checkout API: it creates orders, checks
// them out and shows the timeline of every request the payment sent to the
// provider, as the API's request log tells it; it refunds orders; and it
// runs and shows the daily settlement.
//
// Usage:
//
//	starter order create --amount 548.90 --currency TRY [--description TEXT]
//	starter checkout --order N --card tok_visa [--wait]
//	starter checkout --amount 548.90 --currency TRY --card tok_visa
//	starter status --order N
//	starter refund --order N [--amount 12.50] [--reason TEXT]
//	starter settlement run --date 2026-03-14
//	starter settlement show --date 2026-03-14
//
// Run "starter --help" for the flags and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
