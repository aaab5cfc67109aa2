package chaos

import (
	"context"
	"fmt"
	"time"

	"chargeonce/provider/settlement"
	"chargeonce/workflows"
)

// settleDays runs the settlement of every provider's every UTC day from
// began to now through the workers, as the daily schedules would, and
// returns the dates, for the checker to read: honest books give no
// exception.
func (r *run) settleDays(ctx context.Context, began time.Time) ([]string, error) {
	var dates []string
	for day := began.UTC().Truncate(24 * time.Hour); !day.After(time.Now()); day = day.AddDate(0, 0, 1) {
		date := day.Format(settlement.DateLayout)
		for _, p := range r.providers() {
			run, err := workflows.RunSettlement(ctx, r.stack.Client(), workflows.SettlementInput{Provider: p.name, Date: date})
			if err == nil {
				err = run.Get(ctx, nil)
			}
			if err != nil {
				return nil, fmt.Errorf("chaos: settle %s at %s: %w", date, p.name, err)
			}
		}
		dates = append(dates, date)
	}
	r.cfg.Logger.Info("days settled", "dates", dates)
	return dates, nil
}
