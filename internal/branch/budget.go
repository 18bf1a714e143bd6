package branch

import (
	"time"

	"github.com/configbutler/gitops-reverser/forges"
)

// maxWidenedWindow bounds how long a low request budget may hold a window
// open: changes still reach Git within a minute.
const maxWidenedWindow = time.Minute

// commitWindow is the silence that closes a window. While a metered forge
// reports its request budget running low, the window widens, so more
// changes share a commit and fewer requests are spent; nothing is dropped,
// changes only wait longer.
func (w *Worker) commitWindow() time.Duration {
	b, ok := w.forgeBudget()
	return widenedWindow(w.cfg.CommitWindow, b, ok)
}

func (w *Worker) forgeBudget() (forges.Budget, bool) {
	if m, ok := w.cfg.Forge.(forges.Budgeter); ok {
		return m.Budget()
	}
	return forges.Budget{}, false
}

// widenedWindow is the decision: a quarter of the budget left doubles the
// window, a tenth quadruples it, none left waits a full minute.
func widenedWindow(window time.Duration, b forges.Budget, known bool) time.Duration {
	if !known || b.Limit <= 0 {
		return window
	}
	left := float64(b.Remaining) / float64(b.Limit)
	switch {
	case b.Remaining <= 0:
		return max(window, maxWidenedWindow)
	case left < 0.10:
		return max(window, min(4*window, maxWidenedWindow))
	case left < 0.25:
		return max(window, min(2*window, maxWidenedWindow))
	}
	return window
}
