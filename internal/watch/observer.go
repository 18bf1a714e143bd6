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
}

// NopObserver observes nothing.
type NopObserver struct{}

func (NopObserver) Event(Scope, apiwatch.EventType) {}
func (NopObserver) Replay(Scope)                    {}
func (NopObserver) Reconnect(Scope)                 {}
func (NopObserver) Gone(Scope)                      {}
