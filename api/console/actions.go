package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"chargeonce/api/wire"
	"chargeonce/internal/idemkey"
)

// action is one of the console's forms and the API route that carries it
// out. The API checks every field and the key's scope, as it does for any
// client, so a form cannot do what the key could not do through the API.
type action struct {
	// pattern is the form's route under Path.
	pattern string
	// title names the action on the page of its result.
	title string
	// route is the API path that the form is sent to.
	route func(r *http.Request) string
	// body is the API request's body, from the form.
	body func(form url.Values) any
	// back is the page that the result links back to.
	back func(r *http.Request) string
}

// optionalAmount is an amount field: empty means the API's default.
func optionalAmount(form url.Values) *string {
	if a := strings.TrimSpace(form.Get("amount")); a != "" {
		return &a
	}
	return nil
}

func refundBody(f url.Values) any {
	return wire.RefundRequest{Amount: optionalAmount(f), Reason: f.Get("reason")}
}

func esc(r *http.Request, name string) string { return url.PathEscape(r.PathValue(name)) }

func backToOrder(r *http.Request) string { return Path + "/orders/" + esc(r, "id") }

// backToDay is the settlement day of the provider that the form names, or
// the list of days.
func backToDay(form url.Values) string {
	if d := form.Get("date"); d != "" {
		if _, err := time.Parse(time.DateOnly, d); err == nil {
			return Path + "/settlements/" + d + ofProvider(form)
		}
	}
	return Path + "/settlements"
}

// ofProvider is the query that names the provider of the form's
// settlement, or none for the default one's.
func ofProvider(form url.Values) string {
	if p := form.Get("provider"); p != "" {
		return "?" + url.Values{"provider": {p}}.Encode()
	}
	return ""
}

var actions = []action{
	{
		pattern: "/orders/{id}/refund", title: "Refund",
		route: func(r *http.Request) string { return "/api/orders/" + esc(r, "id") + "/refunds" },
		body:  refundBody,
		back:  backToOrder,
	},
	{
		pattern: "/orders/{id}/capture", title: "Capture",
		route: func(r *http.Request) string { return "/api/orders/" + esc(r, "id") + "/capture" },
		body:  func(f url.Values) any { return wire.CaptureRequest{Amount: optionalAmount(f)} },
		back:  backToOrder,
	},
	{
		pattern: "/orders/{id}/void", title: "Void",
		route: func(r *http.Request) string { return "/api/orders/" + esc(r, "id") + "/void" },
		body:  func(url.Values) any { return wire.VoidRequest{} },
		back:  backToOrder,
	},
	{
		pattern: "/charges/{id}/refund", title: "Refund of a charge",
		route: func(r *http.Request) string { return "/api/charges/" + esc(r, "id") + "/refunds" },
		body:  refundBody,
		back:  func(r *http.Request) string { return backToDay(r.PostForm) },
	},
	{
		pattern: "/settlements/{date}/exceptions/{id}/resolve", title: "Resolution",
		route: func(r *http.Request) string {
			return "/api/settlements/" + esc(r, "date") + "/exceptions/" + esc(r, "id") + "/resolve" + ofProvider(r.PostForm)
		},
		body: func(f url.Values) any { return wire.ResolveExceptionRequest{Note: f.Get("note")} },
		back: func(r *http.Request) string {
			return Path + "/settlements/" + esc(r, "date") + ofProvider(r.PostForm) + "#exception-" + esc(r, "id")
		},
	},
	{
		pattern: "/settlements/run", title: "Settlement run",
		route: func(r *http.Request) string {
			return "/api/settlements/" + url.PathEscape(r.PostForm.Get("date")) + "/run" + ofProvider(r.PostForm)
		},
		body: func(url.Values) any { return wire.SettlementRunRequest{} },
		back: func(r *http.Request) string { return backToDay(r.PostForm) },
	},
	{
		pattern: "/endpoints/{id}/disable", title: "Disabling the endpoint",
		route: func(r *http.Request) string { return "/api/webhook-endpoints/" + esc(r, "id") + "/disable" },
		body:  func(url.Values) any { return wire.EndpointStateRequest{} },
		back:  backToEndpoint,
	},
	{
		pattern: "/endpoints/{id}/enable", title: "Enabling the endpoint",
		route: func(r *http.Request) string { return "/api/webhook-endpoints/" + esc(r, "id") + "/enable" },
		body:  func(url.Values) any { return wire.EndpointStateRequest{} },
		back:  backToEndpoint,
	},
	{
		pattern: "/endpoints/{id}/rotate-secret", title: "Rotating the endpoint's secret",
		route: func(r *http.Request) string { return "/api/webhook-endpoints/" + esc(r, "id") + "/rotate-secret" },
		body: func(f url.Values) any {
			return wire.RotateSecretRequest{KeepPreviousFor: strings.TrimSpace(f.Get("keep_previous_for"))}
		},
		back: backToEndpoint,
	},
	{
		pattern: "/events/{id}/replay", title: "Replay of the event",
		route: func(r *http.Request) string { return "/api/events/" + esc(r, "id") + "/replay" },
		body:  func(f url.Values) any { return wire.ReplayRequest{EndpointID: f.Get("endpoint")} },
		back: func(r *http.Request) string {
			return Path + "/endpoints/" + url.PathEscape(r.PostForm.Get("endpoint"))
		},
	},
}

func backToEndpoint(r *http.Request) string { return Path + "/endpoints/" + esc(r, "id") }

// resultData is what the page of an action's result shows.
type resultData struct {
	Title string
	// Status is the API's answer.
	Status int
	OK     bool
	// Fields are the answer's fields that are one value each, by name.
	Fields [][2]string
	// Problem is the API's problem, when it refused.
	Problem *wire.Problem
	Back    string
}

// perform sends the form of a to the API as the signed-in key, with the
// Idempotency-Key that the form was rendered with, and shows the answer.
func (c *Console) perform(a action) func(http.ResponseWriter, *http.Request, *visit) {
	return func(w http.ResponseWriter, r *http.Request, v *visit) {
		key, err := uuid.Parse(r.PostForm.Get("idempotency_key"))
		if err != nil || key.String() != r.PostForm.Get("idempotency_key") {
			c.renderError(w, r, v, http.StatusBadRequest, "The form has no idempotency key of its own, so nothing was sent. Reload the page and send it again.")
			return
		}
		body, err := json.Marshal(a.body(r.PostForm))
		if err != nil {
			c.renderError(w, r, v, http.StatusInternalServerError, "The form could not be encoded: "+err.Error())
			return
		}
		header, err := idemkey.Format(key.String())
		if err != nil {
			c.renderError(w, r, v, http.StatusBadRequest, err.Error())
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, a.route(r), bytes.NewReader(body))
		if err != nil {
			c.renderError(w, r, v, http.StatusBadRequest, "The form names no resource the API has.")
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(idemkey.Header, header)
		req.RemoteAddr = r.RemoteAddr
		answer := newRecorder()
		c.act(answer, req, v.key)
		if answer.status == 0 {
			answer.status = http.StatusOK
		}

		d := resultData{Title: a.title, Status: answer.status, OK: answer.status < 300, Back: a.back(r)}
		status := http.StatusOK
		if !d.OK {
			status = answer.status
		}
		ct, _, _ := mime.ParseMediaType(answer.header.Get("Content-Type"))
		switch {
		case ct == "application/problem+json":
			var p wire.Problem
			if err := json.Unmarshal(answer.body.Bytes(), &p); err == nil {
				d.Problem = &p
			}
		case ct == "application/json":
			d.Fields = scalarFields(answer.body.Bytes())
		}
		if d.Problem == nil && !d.OK {
			d.Problem = &wire.Problem{Title: http.StatusText(answer.status)}
		}
		c.render(w, r, status, "result", v, a.title, d)
	}
}

// scalarFields returns the top-level fields of a JSON object that hold one
// string, number or boolean, by name.
func scalarFields(body []byte) [][2]string {
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&fields) != nil {
		return nil
	}
	var out [][2]string
	for name, value := range fields {
		switch value.(type) {
		case string, bool, json.Number:
			out = append(out, [2]string{name, fmt.Sprint(value)})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// recorder keeps the API's answer to an action.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
