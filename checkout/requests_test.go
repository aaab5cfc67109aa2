package checkout

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckReplay_RefusesAPendingRowWithinTheBudgetOnly(t *testing.T) {
	created := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	budget := 12 * time.Second

	err := CheckReplay(created, true, budget, created.Add(2*time.Second))
	var inProgress *InProgressError
	require.True(t, errors.As(err, &inProgress), "error %v", err)
	require.ErrorIs(t, err, ErrInProgress)
	require.Equal(t, 10*time.Second, inProgress.RetryAfter)

	require.NoError(t, CheckReplay(created, true, budget, created.Add(budget)), "after the budget the first request has answered")
	require.NoError(t, CheckReplay(created, false, budget, created.Add(time.Second)), "a settled row answers as it stands")
}
