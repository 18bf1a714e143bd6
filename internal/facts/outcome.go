package facts

// Outcome is the terminal outcome of one audit event at the ingress: the
// outcome label of gitopsreverser_audit_events_total (architecture.md,
// "Observability"). Every event gets exactly one.
type Outcome string

const (
	// OutcomeQueued: the event passed the accept gate and its fact was
	// published. Extract returns it for every accepted event; the ingress
	// turns it into OutcomeWriteError when the publish fails.
	OutcomeQueued Outcome = "queued"
	// OutcomeStage: not the ResponseComplete stage.
	OutcomeStage Outcome = "stage"
	// OutcomeReadOnlyOrUnknownVerb: not create, update, patch, delete or
	// deletecollection.
	OutcomeReadOnlyOrUnknownVerb Outcome = "read_only_or_unknown_verb"
	// OutcomeFailedRequest: no 2xx responseStatus.code.
	OutcomeFailedRequest Outcome = "failed_request"
	// OutcomeDryRun: the request carried dryRun=All, so nothing persisted.
	OutcomeDryRun Outcome = "dry_run"
	// OutcomeUnchangedResourceVersion: an update or patch whose response
	// carries the version the request was made against: a no-op write.
	OutcomeUnchangedResourceVersion Outcome = "unchanged_resource_version"
	// OutcomeNonScaleSubresource: a write to a subresource other than scale
	// (status, eviction, binding, ...).
	OutcomeNonScaleSubresource Outcome = "non_scale_subresource"
	// OutcomeNoAttributionFact: the event passed the gate but yields nothing
	// a watch event could join on (no type, or no name, uid or version), or,
	// on the shared endpoint, names no known route.
	OutcomeNoAttributionFact Outcome = "no_attribution_fact"
	// OutcomeWriteError: the fact was accepted but publishing it failed.
	OutcomeWriteError Outcome = "write_error"
)

// Outcomes lists every outcome, for zero series.
func Outcomes() []Outcome {
	return []Outcome{OutcomeQueued, OutcomeStage, OutcomeReadOnlyOrUnknownVerb, OutcomeFailedRequest, OutcomeDryRun,
		OutcomeUnchangedResourceVersion, OutcomeNonScaleSubresource, OutcomeNoAttributionFact, OutcomeWriteError}
}

// The categories of outcomes (the category label of
// gitopsreverser_audit_events_total).
const (
	// CategoryAccepted: a fact was published.
	CategoryAccepted = "accepted"
	// CategoryRejected: the accept gate refused the event by design: it is
	// not a persisted write anyone could be named for (a read, a failure, a
	// dry run, a no-op, another stage or subresource). Expected in volume.
	CategoryRejected = "rejected"
	// CategoryError: a persisted write that no fact will name: its fact could
	// not be built or published. Should be zero; each one makes a commit
	// unresolved.
	CategoryError = "error"
)

// Category groups the outcome: CategoryAccepted, CategoryRejected or
// CategoryError.
func (o Outcome) Category() string {
	switch o {
	case OutcomeQueued:
		return CategoryAccepted
	case OutcomeNoAttributionFact, OutcomeWriteError:
		return CategoryError
	default:
		return CategoryRejected
	}
}
