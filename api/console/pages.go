package console

import (
	"cmp"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"chargeonce"
	"chargeonce/store"
	"chargeonce/workflows"
)

func (c *Console) routes() {
	m := c.mux
	m.HandleFunc("GET "+Path+"/console.css", serveStyle)
	m.HandleFunc("GET "+Path+"/sign-in", c.signInPage)
	m.HandleFunc("POST "+Path+"/sign-in", c.signIn)
	m.HandleFunc("POST "+Path+"/sign-out", c.signedIn(c.signOut))
	m.HandleFunc("GET "+Path, c.signedIn(c.overview))
	m.HandleFunc("GET "+Path+"/orders", c.signedIn(c.orders))
	m.HandleFunc("GET "+Path+"/orders/{id}", c.signedIn(c.order))
	m.HandleFunc("GET "+Path+"/refunds", c.signedIn(c.openRefunds))
	m.HandleFunc("GET "+Path+"/settlements", c.signedIn(c.settlements))
	m.HandleFunc("GET "+Path+"/settlements/{date}", c.signedIn(c.settlementDay))
	m.HandleFunc("GET "+Path+"/endpoints", c.signedIn(c.endpoints))
	m.HandleFunc("GET "+Path+"/endpoints/{id}", c.signedIn(c.endpoint))
	m.HandleFunc("GET "+Path+"/audit", c.signedIn(c.auditLog))
	for _, a := range actions {
		m.HandleFunc("POST "+Path+a.pattern, c.signedIn(c.perform(a)))
	}
}

// chartDays is how many days the overview's chart shows, today included.
const chartDays = 14

// overviewLists bounds the lists of the overview; each links to the whole.
const overviewLists = 10

// settlementDays is how many report dates the settlement pages look back.
const settlementDays = 60

// maxExceptions is how many exceptions of one date a page shows.
const maxExceptions = store.MaxSettlementBatch

type overviewData struct {
	Today  time.Time
	Charts []chart
	// Days are the chart's days, newest first, with their figures.
	Days      []dayFigures
	Providers []providerShare
	// OpenExceptions are the first of the unresolved exceptions, newest
	// date first; OpenExceptionCount counts them all.
	OpenExceptions     []openException
	OpenExceptionCount int
	OpenRefunds        int
	OldestRefund       time.Time
	OpenAttempts       int
	OldestAttempt      *store.Attempt
	FailingEndpoints   []store.Endpoint
	PendingDeliveries  int
}

type openException struct {
	Provider string
	Date     string
	ID       string
	store.SettlementException
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, v *visit) {
	ctx := r.Context()
	now := time.Now().UTC()
	today := now.Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, -(chartDays - 1))
	outcomes, err := c.store.AttemptOutcomes(ctx, since)
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	d := overviewData{Today: today}
	d.Days, d.Charts = paidDays(outcomes, since, chartDays)
	d.Providers = providerShares(outcomes)
	if d.OpenExceptions, d.OpenExceptionCount, err = c.openExceptions(r, overviewLists); err != nil {
		c.failRead(w, r, v, err)
		return
	}
	if d.OpenRefunds, d.OldestRefund, err = c.store.OpenRefundStats(ctx); err != nil {
		c.failRead(w, r, v, err)
		return
	}
	if d.OpenAttempts, _, err = c.store.OpenAttemptStats(ctx); err != nil {
		c.failRead(w, r, v, err)
		return
	}
	switch a, err := c.store.OldestOpenAttempt(ctx); {
	case err == nil:
		d.OldestAttempt = &a
	case !errors.Is(err, store.ErrNotFound):
		c.failRead(w, r, v, err)
		return
	}
	stats, err := c.store.DeliveryStats(ctx)
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	d.PendingDeliveries = stats.Pending
	if len(stats.FailingSince) > 0 {
		all, err := c.store.Endpoints(ctx)
		if err != nil {
			c.failRead(w, r, v, err)
			return
		}
		for _, e := range all {
			if _, failing := stats.FailingSince[e.ID]; failing {
				since := stats.FailingSince[e.ID]
				e.FailingSince = &since
				d.FailingEndpoints = append(d.FailingEndpoints, e)
			}
		}
	}
	c.render(w, r, http.StatusOK, "overview", v, "Overview", d)
}

// openExceptions returns the first limit unresolved exceptions of every
// provider's recent report dates, newest date first, and how many there
// are.
func (c *Console) openExceptions(r *http.Request, limit int) ([]openException, int, error) {
	runs, err := c.store.SettlementRuns(r.Context(), settlementDays)
	if err != nil {
		return nil, 0, err
	}
	var open []openException
	count := 0
	for _, run := range runs {
		days, err := c.exceptionsOf(r, run.Provider, run.Date)
		if err != nil {
			return nil, 0, err
		}
		for _, e := range days {
			if e.Resolution != nil {
				continue
			}
			count++
			if len(open) < limit {
				open = append(open, openException{Provider: run.Provider, Date: run.Date, ID: e.ID, SettlementException: e.SettlementException})
			}
		}
	}
	return open, count, nil
}

// exception is a settlement exception with its name and its resolution,
// nil while it is open.
type exception struct {
	store.SettlementException
	ID         string
	Resolution *store.ExceptionResolution
}

func (c *Console) exceptionsOf(r *http.Request, provider, date string) ([]exception, error) {
	list, err := c.store.SettlementExceptions(r.Context(), provider, date, maxExceptions)
	if err != nil {
		return nil, err
	}
	resolved, err := c.store.ExceptionResolutions(r.Context(), provider, date)
	if err != nil {
		return nil, err
	}
	out := make([]exception, len(list))
	for i, e := range list {
		out[i] = exception{SettlementException: e, ID: store.ExceptionID(date, e)}
		if res, ok := resolved[out[i].ID]; ok {
			out[i].Resolution = &res
		}
	}
	return out, nil
}

type ordersData struct {
	Query  url.Values
	Orders []store.Order
	// Next is the query of the next page, empty on the last.
	Next     string
	Statuses []chargeonce.OrderStatus
	Problem  string
}

// orderStatuses lists the statuses that the search offers.
var orderStatuses = []chargeonce.OrderStatus{chargeonce.OrderPlaced, chargeonce.OrderPaymentPending, chargeonce.OrderPaid,
	chargeonce.OrderPartiallyRefunded, chargeonce.OrderRefunded, chargeonce.OrderAuthorized, chargeonce.OrderCaptured,
	chargeonce.OrderVoided, chargeonce.OrderExpired}

// ordersPage is how many orders one page of the search lists.
const ordersPage = 50

func (c *Console) orders(w http.ResponseWriter, r *http.Request, v *visit) {
	query := r.URL.Query()
	d := ordersData{Query: query, Statuses: orderStatuses}
	q, err := orderQuery(query)
	if err != nil {
		d.Problem = err.Error()
		c.render(w, r, http.StatusBadRequest, "orders", v, "Orders", d)
		return
	}
	if d.Orders, err = c.store.SearchOrders(r.Context(), q); err != nil {
		c.failRead(w, r, v, err)
		return
	}
	if len(d.Orders) == q.Limit {
		next := url.Values{}
		for k, vs := range query {
			next[k] = vs
		}
		next.Set("before", strconv.FormatInt(d.Orders[len(d.Orders)-1].ID, 10))
		d.Next = Path + "/orders?" + next.Encode()
	}
	c.render(w, r, http.StatusOK, "orders", v, "Orders", d)
}

// orderQuery reads the search form; each field is checked as the API
// checks its own.
func orderQuery(v url.Values) (store.OrderQuery, error) {
	q := store.OrderQuery{Limit: ordersPage, Reference: v.Get("reference")}
	if err := chargeonce.ValidateText(q.Reference); err != nil || len(q.Reference) > 200 {
		return q, errors.New("the merchant reference must be text of at most 200 bytes")
	}
	var err error
	if q.ID, err = positive(v.Get("id"), "order id"); err != nil {
		return q, err
	}
	if q.Before, err = positive(v.Get("before"), "before"); err != nil {
		return q, err
	}
	if s := chargeonce.OrderStatus(v.Get("status")); s != "" {
		if !s.Valid() {
			return q, errors.New("the status " + strconv.Quote(string(s)) + " is not an order status")
		}
		q.Status = s
	}
	if q.From, err = date(v.Get("from"), "from"); err != nil {
		return q, err
	}
	if q.To, err = date(v.Get("to"), "to"); err != nil {
		return q, err
	}
	if !q.To.IsZero() {
		q.To = q.To.AddDate(0, 0, 1) // "to" names the last day searched
	}
	return q, nil
}

func positive(s, name string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("the " + name + " must be a positive whole number")
	}
	return n, nil
}

func date(s, name string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, errors.New("the date " + name + " must be written as 2026-03-14")
	}
	return t, nil
}

type orderData struct {
	Order    store.Order
	Attempts []attemptView
	Refunds  []store.Refund
	Hold     *store.Hold
	Moves    []store.Move
	Events   []eventView
	// Workflows link the refunds', captures' and voids' workflows in the
	// Temporal Web UI, by key; empty without a Web UI.
	Workflows map[string]string
	// Refundable, Capturable and Voidable say which forms the order's
	// status allows; the API decides.
	Refundable, Capturable bool
}

type attemptView struct {
	store.Attempt
	WorkflowURL string
}

type eventView struct {
	store.MerchantEvent
	Deliveries []store.DeliveryAttempt
}

// deliveriesPerEndpoint bounds the deliveries read of each endpoint for an
// order's page.
const deliveriesPerEndpoint = 200

func (c *Console) order(w http.ResponseWriter, r *http.Request, v *visit) {
	ctx := r.Context()
	id, err := positive(r.PathValue("id"), "order id")
	if err != nil || id == 0 {
		c.renderError(w, r, v, http.StatusNotFound, "There is no order "+r.PathValue("id")+".")
		return
	}
	o, attempts, err := c.store.GetOrder(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		c.renderError(w, r, v, http.StatusNotFound, "There is no order "+strconv.FormatInt(id, 10)+".")
		return
	}
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	d := orderData{Order: o}
	for _, a := range attempts {
		d.Attempts = append(d.Attempts, attemptView{Attempt: a, WorkflowURL: c.workflowURL(workflows.WorkflowID(a.Key))})
	}
	if d.Refunds, err = c.store.OrderRefunds(ctx, id); err != nil {
		c.failRead(w, r, v, err)
		return
	}
	switch h, err := c.store.OrderHold(ctx, id); {
	case err == nil:
		d.Hold = &h
	case !errors.Is(err, store.ErrNotFound):
		c.failRead(w, r, v, err)
		return
	}
	if d.Moves, err = c.store.OrderMoves(ctx, id); err != nil {
		c.failRead(w, r, v, err)
		return
	}
	d.Workflows = map[string]string{}
	for _, f := range d.Refunds {
		d.Workflows[f.Key] = c.workflowURL(workflows.RefundWorkflowID(f.Key))
	}
	for _, m := range d.Moves {
		d.Workflows[m.Key] = c.workflowURL(workflows.MoveWorkflowID(m.Key))
	}
	if d.Events, err = c.orderEvents(r, id); err != nil {
		c.failRead(w, r, v, err)
		return
	}
	switch o.Status {
	case chargeonce.OrderPaid, chargeonce.OrderPartiallyRefunded, chargeonce.OrderCaptured:
		d.Refundable = true
	case chargeonce.OrderAuthorized:
		d.Capturable = true
	}
	c.render(w, r, http.StatusOK, "order", v, "Order "+strconv.FormatInt(id, 10), d)
}

// orderEvents returns the order's merchant events, each with its deliveries
// to every endpoint, newest delivery first.
func (c *Console) orderEvents(r *http.Request, orderID int64) ([]eventView, error) {
	events, err := c.store.OrderEvents(r.Context(), orderID)
	if err != nil || len(events) == 0 {
		return nil, err
	}
	byEvent := map[string][]store.DeliveryAttempt{}
	endpoints, err := c.store.Endpoints(r.Context())
	if err != nil {
		return nil, err
	}
	for _, e := range endpoints {
		deliveries, err := c.store.Deliveries(r.Context(), e.ID, deliveriesPerEndpoint)
		if err != nil {
			return nil, err
		}
		for _, d := range deliveries {
			byEvent[d.EventID] = append(byEvent[d.EventID], d)
		}
	}
	out := make([]eventView, len(events))
	for i, e := range events {
		out[i] = eventView{MerchantEvent: e, Deliveries: byEvent[e.ID]}
	}
	return out, nil
}

// workflowURL links a workflow in the Temporal Web UI, or is empty when the
// console knows no Web UI.
func (c *Console) workflowURL(workflowID string) string {
	if c.webUI == "" {
		return ""
	}
	return c.webUI + "/namespaces/" + url.PathEscape(c.namespace) + "/workflows/" + url.PathEscape(workflowID)
}

func (c *Console) openRefunds(w http.ResponseWriter, r *http.Request, v *visit) {
	refunds, err := c.store.OpenRefunds(r.Context(), store.MaxConsolePage)
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	c.render(w, r, http.StatusOK, "refunds", v, "Open refunds", refunds)
}

type settlementRow struct {
	store.SettlementRun
	Open int
}

func (c *Console) settlements(w http.ResponseWriter, r *http.Request, v *visit) {
	runs, err := c.store.SettlementRuns(r.Context(), settlementDays)
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	rows := make([]settlementRow, len(runs))
	for i, run := range runs {
		list, err := c.exceptionsOf(r, run.Provider, run.Date)
		if err != nil {
			c.failRead(w, r, v, err)
			return
		}
		rows[i] = settlementRow{SettlementRun: run}
		for _, e := range list {
			if e.Resolution == nil {
				rows[i].Open++
			}
		}
	}
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	c.render(w, r, http.StatusOK, "settlements", v, "Settlement days", map[string]any{"Runs": rows, "Yesterday": yesterday, "Providers": c.providers})
}

type dayData struct {
	Run        store.SettlementRun
	Exceptions []exception
	Open       int
}

// settlementDay shows one provider's settlement of a date: the provider
// of ?provider=, or the default one.
func (c *Console) settlementDay(w http.ResponseWriter, r *http.Request, v *visit) {
	date := r.PathValue("date")
	if _, err := time.Parse(time.DateOnly, date); err != nil {
		c.renderError(w, r, v, http.StatusNotFound, "There is no settlement day "+date+": dates are written as 2026-03-14.")
		return
	}
	provider := cmp.Or(r.URL.Query().Get("provider"), c.providers[0])
	if chargeonce.CheckProviderName(provider) != nil {
		c.renderError(w, r, v, http.StatusNotFound, "There is no provider "+strconv.Quote(provider)+".")
		return
	}
	run, err := c.store.SettlementRun(r.Context(), provider, date)
	if errors.Is(err, store.ErrNotFound) {
		c.renderError(w, r, v, http.StatusNotFound, "The report of "+date+" of provider "+provider+" was not matched yet.")
		return
	}
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	d := dayData{Run: run}
	if d.Exceptions, err = c.exceptionsOf(r, provider, date); err != nil {
		c.failRead(w, r, v, err)
		return
	}
	for _, e := range d.Exceptions {
		if e.Resolution == nil {
			d.Open++
		}
	}
	c.render(w, r, http.StatusOK, "settlement", v, "Settlement of "+provider+" "+date, d)
}

func (c *Console) endpoints(w http.ResponseWriter, r *http.Request, v *visit) {
	list, err := c.store.Endpoints(r.Context())
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	c.render(w, r, http.StatusOK, "endpoints", v, "Event endpoints", list)
}

// endpointDeliveries is how many deliveries an endpoint's page lists.
const endpointDeliveries = 100

func (c *Console) endpoint(w http.ResponseWriter, r *http.Request, v *visit) {
	e, err := c.store.GetEndpoint(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		c.renderError(w, r, v, http.StatusNotFound, "There is no event endpoint "+r.PathValue("id")+".")
		return
	}
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	deliveries, err := c.store.Deliveries(r.Context(), e.ID, endpointDeliveries)
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	c.render(w, r, http.StatusOK, "endpoint", v, "Event endpoint "+e.ID, map[string]any{"Endpoint": e, "Deliveries": deliveries})
}

// auditPage is how many entries one page of the audit log lists.
const auditPage = 50

func (c *Console) auditLog(w http.ResponseWriter, r *http.Request, v *visit) {
	before, err := positive(r.URL.Query().Get("before"), "before")
	if err != nil {
		c.renderError(w, r, v, http.StatusBadRequest, err.Error())
		return
	}
	entries, err := c.store.AuditLog(r.Context(), before, auditPage)
	if err != nil {
		c.failRead(w, r, v, err)
		return
	}
	var next int64
	if len(entries) == auditPage {
		next = entries[len(entries)-1].ID
	}
	c.render(w, r, http.StatusOK, "audit", v, "Audit log", map[string]any{"Entries": entries, "Next": next})
}

// failRead answers a page whose reads failed.
func (c *Console) failRead(w http.ResponseWriter, r *http.Request, v *visit, err error) {
	c.log.Error("console: read a page", "path", r.URL.Path, "error", err)
	c.renderError(w, r, v, http.StatusServiceUnavailable, "The console cannot read the database; try again shortly.")
}

// providerShare is one provider's attempts of the chart's days, by outcome.
type providerShare struct {
	Provider                                  string
	Total, Paid, Declined, Unknown, Otherwise int
}

func providerShares(outcomes []store.AttemptOutcome) []providerShare {
	by := map[string]*providerShare{}
	for _, o := range outcomes {
		p := by[o.Provider]
		if p == nil {
			p = &providerShare{Provider: o.Provider}
			by[o.Provider] = p
		}
		p.Total += o.Count
		switch o.Status {
		case chargeonce.AttemptSucceeded:
			p.Paid += o.Count
		case chargeonce.AttemptDeclined:
			p.Declined += o.Count
		case chargeonce.AttemptOpen:
			p.Unknown += o.Count
		default:
			p.Otherwise += o.Count
		}
	}
	out := make([]providerShare, 0, len(by))
	for _, p := range by {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b providerShare) int { return cmp.Compare(a.Provider, b.Provider) })
	return out
}
