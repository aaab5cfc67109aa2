package console

import (
	"slices"
	"time"

	"chargeonce"
	"chargeonce/store"
)

// dayFigures are one day's paid attempts: how many, and their sum in each
// currency.
type dayFigures struct {
	Day    time.Time
	Paid   int
	Volume []chargeonce.Money
}

// chart is the paid volume of one currency over the chart's days, drawn as
// SVG bars on a ChartWidth × ChartHeight canvas.
type chart struct {
	Currency string
	Total    chargeonce.Money
	Peak     chargeonce.Money
	Bars     []bar
}

// bar is one day of a chart.
type bar struct {
	X, Y, Width, Height float64
	// Label says the day, its volume and its count, as the bar's title.
	Label string
	Day   string
}

// The chart's canvas, in SVG user units; the page scales it to its width.
const (
	ChartWidth  = 700
	ChartHeight = 160
)

// paidDays sums the succeeded attempts of days days from since, a UTC
// midnight: the days newest first, and one chart per currency, oldest day
// on the left.
func paidDays(outcomes []store.AttemptOutcome, since time.Time, days int) ([]dayFigures, []chart) {
	type sum struct {
		count int
		minor map[string]int64
	}
	perDay := make([]sum, days)
	currencies := map[string]bool{}
	for _, o := range outcomes {
		i := int(o.Day.Sub(since) / (24 * time.Hour))
		if o.Status != chargeonce.AttemptSucceeded || i < 0 || i >= days {
			continue
		}
		if perDay[i].minor == nil {
			perDay[i].minor = map[string]int64{}
		}
		perDay[i].count += o.Count
		perDay[i].minor[o.Currency] += o.Minor
		currencies[o.Currency] = true
	}
	names := make([]string, 0, len(currencies))
	for c := range currencies {
		names = append(names, c)
	}
	slices.Sort(names)

	figures := make([]dayFigures, days)
	for i := range days {
		f := dayFigures{Day: since.AddDate(0, 0, i), Paid: perDay[i].count}
		for _, c := range names {
			if m, ok := perDay[i].minor[c]; ok {
				f.Volume = append(f.Volume, chargeonce.Money{Minor: m, Currency: c})
			}
		}
		figures[days-1-i] = f
	}

	charts := make([]chart, 0, len(names))
	slot := float64(ChartWidth) / float64(days)
	for _, c := range names {
		ch := chart{Currency: c, Total: chargeonce.Money{Currency: c}, Peak: chargeonce.Money{Currency: c}}
		for i := range days {
			m := perDay[i].minor[c]
			ch.Total.Minor += m
			ch.Peak.Minor = max(ch.Peak.Minor, m)
		}
		for i := range days {
			m := chargeonce.Money{Minor: perDay[i].minor[c], Currency: c}
			h := 0.0
			if ch.Peak.Minor > 0 {
				h = float64(m.Minor) / float64(ch.Peak.Minor) * (ChartHeight - 20)
			}
			day := since.AddDate(0, 0, i).Format(time.DateOnly)
			ch.Bars = append(ch.Bars, bar{X: float64(i)*slot + 2, Y: ChartHeight - h, Width: slot - 4, Height: h,
				Day: day, Label: day + ": " + m.String() + " in " + chargeonce.Plural(perDay[i].count, "payment")})
		}
		charts = append(charts, ch)
	}
	return figures, charts
}
