package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"chargeonce/api/wire"
)

// The webhook endpoints: where chargeonce sends the merchant's events,
// signed per Standard Webhooks with the endpoint's secret. Every call here
// needs the operator scope.

// CreateEndpoint registers an endpoint: req.URL (https, or http to a
// loopback host), the event types it wants (empty: all of them) and a
// description. The answer holds the endpoint's signing secret (whsec_…),
// which the API shows only here and on a rotation: keep it where the
// receiver verifies signatures. Bad input is a *Problem of type
// wire.ProblemInvalidRequest, and registers nothing.
func (c *Client) CreateEndpoint(ctx context.Context, req wire.CreateEndpointRequest) (wire.Endpoint, error) {
	var e wire.Endpoint
	_, err := c.call(ctx, http.MethodPost, "/api/webhook-endpoints", req, nil, &e)
	return e, err
}

// Endpoints lists the registered endpoints, without their secrets.
func (c *Client) Endpoints(ctx context.Context) ([]wire.Endpoint, error) {
	var l wire.EndpointList
	_, err := c.call(ctx, http.MethodGet, "/api/webhook-endpoints", nil, nil, &l)
	return l.Endpoints, err
}

// GetEndpoint reads an endpoint, without its secret. An unknown endpoint
// is a *Problem of type wire.ProblemNotFound.
func (c *Client) GetEndpoint(ctx context.Context, id string) (wire.Endpoint, error) {
	var e wire.Endpoint
	_, err := c.call(ctx, http.MethodGet, endpointPath(id), nil, nil, &e)
	return e, err
}

// DisableEndpoint stops sending events to an endpoint: its deliveries are
// not tried, and no new event is queued for it, until EnableEndpoint. An
// event it missed can be sent with ReplayEvent once it is enabled.
func (c *Client) DisableEndpoint(ctx context.Context, id string) (wire.Endpoint, error) {
	return c.setEndpointState(ctx, id, "/disable")
}

// EnableEndpoint sends events to a disabled endpoint again, such as one
// that answered 410 Gone once it is back.
func (c *Client) EnableEndpoint(ctx context.Context, id string) (wire.Endpoint, error) {
	return c.setEndpointState(ctx, id, "/enable")
}

func (c *Client) setEndpointState(ctx context.Context, id, action string) (wire.Endpoint, error) {
	var e wire.Endpoint
	_, err := c.call(ctx, http.MethodPost, endpointPath(id)+action, wire.EndpointStateRequest{}, nil, &e)
	return e, err
}

// RotateEndpointSecret gives an endpoint a new signing secret, returned in
// the answer's Secret. The previous one goes on signing beside it until
// PreviousSecretExpiresAt (req.KeepPreviousFor, a Go duration; empty means
// 24h, "0s" retires it at once), so that the receiver can switch without
// refusing an event.
func (c *Client) RotateEndpointSecret(ctx context.Context, id string, req wire.RotateSecretRequest) (wire.Endpoint, error) {
	var e wire.Endpoint
	_, err := c.call(ctx, http.MethodPost, endpointPath(id)+"/rotate-secret", req, nil, &e)
	return e, err
}

// Deliveries lists the last tries of sending events to an endpoint, the
// newest first: at most limit of them (1 to 1000), or the API's default of
// 100 when limit is 0.
func (c *Client) Deliveries(ctx context.Context, endpointID string, limit int) ([]wire.Delivery, error) {
	path := endpointPath(endpointID) + "/deliveries"
	if limit != 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	var l wire.DeliveryList
	_, err := c.call(ctx, http.MethodGet, path, nil, nil, &l)
	return l.Deliveries, err
}

// ReplayEvent sends an event to an endpoint again, whatever became of its
// earlier deliveries (such as one given up after the retry schedule ran
// out). An unknown event or endpoint is a *Problem of type
// wire.ProblemNotFound; a disabled endpoint, of type
// wire.ProblemEndpointDisabled.
func (c *Client) ReplayEvent(ctx context.Context, eventID, endpointID string) (wire.ReplayAnswer, error) {
	var a wire.ReplayAnswer
	_, err := c.call(ctx, http.MethodPost, "/api/events/"+url.PathEscape(eventID)+"/replay", wire.ReplayRequest{EndpointID: endpointID}, nil, &a)
	return a, err
}

func endpointPath(id string) string {
	return "/api/webhook-endpoints/" + url.PathEscape(id)
}
