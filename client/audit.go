package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"chargeonce/api/wire"
)

// AuditLog reads one page of the audit log, the operator actions newest
// first: the entries whose ID is below before (0 starts at the newest), at
// most limit of them (1 to 200; 0 is the API's default of 50). Scope
// operator. The page's NextBefore, when set, is the before of the next
// page:
//
//	for before := int64(0); ; {
//		page, err := api.AuditLog(ctx, before, 0)
//		...
//		if page.NextBefore == nil {
//			break
//		}
//		before = *page.NextBefore
//	}
func (c *Client) AuditLog(ctx context.Context, before int64, limit int) (wire.AuditLog, error) {
	q := url.Values{}
	if before != 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/api/audit-log"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l wire.AuditLog
	_, err := c.call(ctx, http.MethodGet, path, nil, nil, &l)
	return l, err
}
