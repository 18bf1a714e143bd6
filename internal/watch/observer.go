package watch

import apiwatch "k8s.io/apimachinery/pkg/watch"

// Observer is told what streams do, for metrics.
type Observer interface {
	// Event: a watch event of type arrived.
	Event(scope Scope, typ apiwatch.EventType)
	// Replay: a replay (sendInitialEvents or LIST) started.
	Replay(scope Scope)
	// Reconnect: a closed watch is resumed from its resourceVersion.
	Reconnect(scope Scope)
	// Gone: the API server answered 410; a fresh replay follows.
	Gone(scope Scope)
	// Resumed: a stream started from its cursor, without a replay.
	Resumed(scope Scope)
	// ColdReplay: a stream with a cursor store started from a replay for
	// reason (ColdNoCursor, ColdUnavailable, ColdExpired, ColdGone,
	// ColdBranchRewritten, ColdResyncRequested).
	ColdReplay(scope Scope, reason string)
}

// NopObserver observes nothing.
type NopObserver struct{}

func (NopObserver) Event(Scope, apiwatch.EventType) {}
func (NopObserver) Replay(Scope)                    {}
func (NopObserver) Reconnect(Scope)                 {}
func (NopObserver) Gone(Scope)                      {}
func (NopObserver) Resumed(Scope)                   {}
func (NopObserver) ColdReplay(Scope, string)        {}
