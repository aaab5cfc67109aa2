package chargeonce_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"chargeonce"
)

// The settlement's ticket rule leaves out exactly the kinds that record a
// repair: a new kind for a person must page, and a repair must not page
// every day.
func TestAlertRules_TheSettlementTicketLeavesOutExactlyTheRepairs(t *testing.T) {
	raw, err := os.ReadFile("deploy/alerts.yml")
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	excluded := regexp.MustCompile(`chargeonce_settlement_exceptions\{kind!~"([^"]*)"\}`)
	var left []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if m := excluded.FindStringSubmatch(r.Expr); m != nil {
				left = append(left, strings.Split(m[1], "|")...)
			}
		}
	}
	var repairs []string
	for _, k := range chargeonce.ExceptionKinds {
		if k.Repair() {
			repairs = append(repairs, string(k))
		}
	}
	slices.Sort(left)
	slices.Sort(repairs)
	require.NotEmpty(t, repairs)
	require.Equal(t, repairs, left)
}
