// Package chargeonce is the domain vocabulary of a payment system that charges
// every card payment exactly once.
//
// It holds money as int64 minor units with an ISO 4217 currency, the payment
// intent and its idempotency key, the statuses of orders and payment
// attempts, the merchant-reference format, the validation rule of each field,
// and the names that the workflow, the worker and the checkout share (task
// queue, update, signal and query; the search attributes, being typed
// Temporal keys, are defined in package workflows). It imports no
// infrastructure: Temporal, HTTP and
// databases live in their own packages and speak this vocabulary; how they
// fit together is in docs/design.md.
package chargeonce
