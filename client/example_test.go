package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"chargeonce/api/wire"
	"chargeonce/client"
)

// A merchant's backend creates an order, pays it, and branches on the
// answer. This one runs against the real API, before any payment worker
// has started, so the checkout charges nothing and says when to pay again.
func Example() {
	env := &exampleEnv{}
	defer env.cleanup()
	a := startAPI(env, false)
	ctx := context.Background()

	api := client.New(a.url, a.key(env))

	order, err := api.CreateOrder(ctx, "548.90", "TRY", "a rug")
	if err != nil {
		fmt.Println("create the order:", err)
		return
	}
	fmt.Printf("order %d: %s %s %s\n", order.ID, order.Status, order.Total, order.Currency)

	res, err := api.Checkout(ctx, order.ID, "tok_visa")
	var p *client.Problem
	switch {
	case err == nil && res.HTTPStatus == http.StatusOK:
		fmt.Println("paid", *res.ProviderPaymentID)
	case err == nil:
		fmt.Println("pending: the payment.* event tells how it settles; do not pay again")
	case errors.As(err, &p) && p.Type == wire.ProblemCardDeclined:
		fmt.Println("declined:", p.DeclineCode)
	case errors.As(err, &p) && p.Status == http.StatusServiceUnavailable:
		fmt.Printf("not charged: %s; pay again in %s\n", p.Title, p.RetryAfter)
	default:
		fmt.Println("checkout:", err)
	}
	// Output:
	// order 1001: placed 548.90 TRY
	// not charged: No payment worker has started yet; nothing was charged; pay again in 5s
}

// exampleEnv is the part of a *testing.T that startAPI needs, for an
// example, which has none.
type exampleEnv struct {
	cleanups []func()
}

func (e *exampleEnv) TempDir() string {
	dir, err := os.MkdirTemp("", "chargeonce-client-example")
	if err != nil {
		panic(err)
	}
	e.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (e *exampleEnv) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }

func (e *exampleEnv) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (e *exampleEnv) cleanup() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}
