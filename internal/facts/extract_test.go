package facts_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// The uids and versions the captured events (testdata/audit, written by
// capture_test.go against the real kube-apiserver) carry.
const (
	appConfigUID = "ed416762-277a-44e2-b2b5-9846ec03c65d"
	guardedUID   = "d6270fc2-6fc3-4287-af06-3581fb30a209"
	webUID       = "777543c6-5319-4979-8539-ba76efadcaae"
)

var (
	admin = facts.Actor{Username: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	cms   = facts.StreamKey{Route: "prod", Resource: "configmaps"}
)

// captured returns the events of one captured scenario: its RequestReceived
// and its ResponseComplete event.
func captured(t *testing.T, scenario string) (received, complete auditv1.Event) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "audit", scenario+".json"))
	require.NoError(t, err)
	events, err := facts.DecodeEventList(body)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, auditv1.StageRequestReceived, events[0].Stage)
	require.Equal(t, auditv1.StageResponseComplete, events[1].Stage)
	return events[0], events[1]
}

// TestExtractCapturedEvents runs the accept gate and the fact extraction
// over the events the real API server sent for each kind of write.
func TestExtractCapturedEvents(t *testing.T) {
	cases := []struct {
		scenario string
		outcome  facts.Outcome
		// want is checked without AuditID and Stage, which are checked
		// against the event itself.
		want facts.Fact
	}{
		{scenario: "create", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "create",
			Namespace: "team-a", Name: "app-config", UID: appConfigUID, ResourceVersion: "213", Actor: admin}},
		{scenario: "update", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "update",
			Namespace: "team-a", Name: "app-config", UID: appConfigUID, ResourceVersion: "214", Actor: admin}},
		{scenario: "merge_patch", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "patch",
			Namespace: "team-a", Name: "app-config", UID: appConfigUID, ResourceVersion: "215", Actor: admin}},
		{scenario: "apply", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "patch",
			Namespace: "team-a", Name: "app-config", UID: appConfigUID, ResourceVersion: "216", Actor: admin}},
		// A no-op apply is byte-for-byte the apply before it but for its id
		// and timestamps: a patch names no version, so the gate cannot tell
		// and passes it with the version the apply produced.
		{scenario: "apply_noop", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "patch",
			Namespace: "team-a", Name: "app-config", UID: appConfigUID, ResourceVersion: "216", Actor: admin}},
		{scenario: "generate_name", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "create",
			Namespace: "team-a", Name: "gen-krdmm", UID: "6d7e0110-ac62-4593-b8f9-3fc810c62a16", ResourceVersion: "217", Actor: admin}},
		{scenario: "impersonated_create", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "create",
			Namespace: "team-a", Name: "alice-config", UID: "c2f47876-0643-406f-a426-c2e26274c645", ResourceVersion: "218",
			Actor: facts.Actor{Username: "alice@example.com", Groups: []string{"developers", "system:authenticated"},
				DisplayName: "Alice Liddell", Email: "alice@example.com"}}},
		// Answered with a Status: the uid is the Status's, there is no version.
		{scenario: "delete", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "delete",
			Namespace: "team-a", Name: "app-config", UID: appConfigUID, Actor: admin}},
		// Answered with the object, deletionTimestamp set by this write.
		{scenario: "delete_with_finalizer", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "delete",
			Namespace: "team-a", Name: "guarded", UID: guardedUID, ResourceVersion: "221", Actor: admin}},
		{scenario: "finalizer_removal", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "patch",
			Namespace: "team-a", Name: "guarded", UID: guardedUID, ResourceVersion: "221",
			Actor: facts.Actor{Username: "system:serviceaccount:team-a:finalizer-remover",
				Groups: []string{"system:authenticated", "system:serviceaccounts", "system:serviceaccounts:team-a"}}}},
		{scenario: "deletecollection", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: cms, Version: "v1", Verb: "deletecollection",
			Namespace: "team-a", Actor: admin, Collection: &facts.Collection{LabelSelector: "batch=yes", UIDs: []string{
				"47f91b5e-b091-4993-8928-b230e47b8632", "0f957848-5938-4cc7-bfcb-b48e890deed3", "3f3c8312-b879-4a51-a7a7-84c84333f30a"}}}},
		// The Scale names its parent; the fact is in the parent's stream.
		{scenario: "scale", outcome: facts.OutcomeQueued, want: facts.Fact{Stream: facts.StreamKey{Route: "prod", Group: "apps", Resource: "deployments"},
			Version: "v1", Verb: "update", Subresource: "scale", Namespace: "team-a", Name: "web", UID: webUID, ResourceVersion: "230", Actor: admin}},
		{scenario: "update_noop", outcome: facts.OutcomeUnchangedResourceVersion},
		{scenario: "create_dry_run", outcome: facts.OutcomeDryRun},
		{scenario: "create_conflict", outcome: facts.OutcomeFailedRequest},
		{scenario: "read", outcome: facts.OutcomeReadOnlyOrUnknownVerb},
		{scenario: "status_update", outcome: facts.OutcomeNonScaleSubresource},
	}
	for _, tc := range cases {
		t.Run(tc.scenario, func(t *testing.T) {
			received, complete := captured(t, tc.scenario)

			_, outcome := facts.Extract(&received, "prod")
			require.Equal(t, facts.OutcomeStage, outcome, "the RequestReceived stage never yields a fact")

			fact, outcome := facts.Extract(&complete, "prod")
			require.Equal(t, tc.outcome, outcome)
			if tc.outcome != facts.OutcomeQueued {
				require.Zero(t, fact)
				return
			}
			require.Equal(t, string(complete.AuditID), fact.AuditID)
			require.Equal(t, complete.StageTimestamp.Time, fact.Stage)
			fact.AuditID, fact.Stage = "", time.Time{}
			require.Equal(t, tc.want, fact)
		})
	}
}

// event decodes one audit event written as the API server sends it.
func event(t *testing.T, body string) auditv1.Event {
	t.Helper()
	events, err := facts.DecodeEventList([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + body + `]}`))
	require.NoError(t, err)
	require.Len(t, events, 1)
	return events[0]
}

// TestExtractEdgeCases covers shapes the captured scenarios do not: other
// API servers' answers, other audit levels, odd request URIs.
func TestExtractEdgeCases(t *testing.T) {
	const user = `"user":{"username":"bob","groups":["system:authenticated"]}`
	bob := facts.Actor{Username: "bob", Groups: []string{"system:authenticated"}}
	cases := []struct {
		name    string
		event   string
		outcome facts.Outcome
		want    facts.Fact
	}{
		{name: "an aggregated API's answer carries only a name",
			event: `{"level":"RequestResponse","auditID":"a1","stage":"ResponseComplete","verb":"create",` + user + `,
				"requestURI":"/apis/metrics.example.com/v1beta1/namespaces/team-a/probes",
				"objectRef":{"resource":"probes","namespace":"team-a","name":"p","apiGroup":"metrics.example.com","apiVersion":"v1beta1"},
				"responseStatus":{"metadata":{},"code":201},
				"responseObject":{"kind":"Probe","apiVersion":"metrics.example.com/v1beta1","metadata":{"name":"p","namespace":"team-a"}}}`,
			outcome: facts.OutcomeQueued,
			want: facts.Fact{AuditID: "a1", Stream: facts.StreamKey{Route: "prod", Group: "metrics.example.com", Resource: "probes"},
				Version: "v1beta1", Verb: "create", Namespace: "team-a", Name: "p", Actor: bob}},
		{name: "at Metadata level objectRef names the object; its resourceVersion is never a key",
			event: `{"level":"Metadata","auditID":"a2","stage":"ResponseComplete","verb":"update",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps/c",
				"objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","uid":"u-2","apiVersion":"v1","resourceVersion":"7"},
				"responseStatus":{"metadata":{},"code":200}}`,
			outcome: facts.OutcomeQueued,
			want:    facts.Fact{AuditID: "a2", Stream: cms, Version: "v1", Verb: "update", Namespace: "team-a", Name: "c", UID: "u-2", Actor: bob}},
		{name: "a create's uid is never objectRef's: the API server replaces the one a client sends",
			event: `{"level":"Metadata","auditID":"a17","stage":"ResponseComplete","verb":"create",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps",
				"objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","uid":"someone-elses","apiVersion":"v1"},
				"responseStatus":{"metadata":{},"code":201}}`,
			outcome: facts.OutcomeQueued,
			want:    facts.Fact{AuditID: "a17", Stream: cms, Version: "v1", Verb: "create", Namespace: "team-a", Name: "c", Actor: bob}},
		{name: "a delete answered with a Status takes objectRef's uid first",
			event: `{"level":"RequestResponse","auditID":"a3","stage":"ResponseComplete","verb":"delete",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps/c",
				"objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","uid":"u-ref","apiVersion":"v1"},
				"responseStatus":{"metadata":{},"status":"Success","code":200},
				"responseObject":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"c","kind":"configmaps","uid":"u-status"}}}`,
			outcome: facts.OutcomeQueued,
			want:    facts.Fact{AuditID: "a3", Stream: cms, Version: "v1", Verb: "delete", Namespace: "team-a", Name: "c", UID: "u-ref", Actor: bob}},
		{name: "a deletecollection answered with a Status has its selectors and an empty uid set",
			event: `{"level":"RequestResponse","auditID":"a4","stage":"ResponseComplete","verb":"deletecollection",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps?labelSelector=app%3Dweb%2Ctier%21%3Dfront&fieldSelector=metadata.name%3Dx&limit=500",
				"objectRef":{"resource":"configmaps","namespace":"team-a","apiVersion":"v1"},
				"responseStatus":{"metadata":{},"code":200},
				"responseObject":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}}`,
			outcome: facts.OutcomeQueued,
			want: facts.Fact{AuditID: "a4", Stream: cms, Version: "v1", Verb: "deletecollection", Namespace: "team-a", Actor: bob,
				Collection: &facts.Collection{LabelSelector: "app=web,tier!=front", FieldSelector: "metadata.name=x", UIDs: []string{}}}},
		{name: "a patch whose body names the version it got back is a no-op",
			event: `{"level":"RequestResponse","auditID":"a5","stage":"ResponseComplete","verb":"patch",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps/c",
				"objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","apiVersion":"v1"},
				"responseStatus":{"metadata":{},"code":200},
				"requestObject":{"metadata":{"resourceVersion":"9"},"data":{"a":"1"}},
				"responseObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"team-a","uid":"u","resourceVersion":"9"}}}`,
			outcome: facts.OutcomeUnchangedResourceVersion},
		{name: "a JSON patch (an array) names no version and passes",
			event: `{"level":"RequestResponse","auditID":"a6","stage":"ResponseComplete","verb":"patch",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps/c",
				"objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","apiVersion":"v1"},
				"responseStatus":{"metadata":{},"code":200},
				"requestObject":[{"op":"add","path":"/data/a","value":"1"}],
				"responseObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"team-a","uid":"u","resourceVersion":"10"}}}`,
			outcome: facts.OutcomeQueued,
			want:    facts.Fact{AuditID: "a6", Stream: cms, Version: "v1", Verb: "patch", Namespace: "team-a", Name: "c", UID: "u", ResourceVersion: "10", Actor: bob}},
		{name: "dryRun among other parameters",
			event: `{"level":"Metadata","auditID":"a7","stage":"ResponseComplete","verb":"patch",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps/c?fieldManager=kubectl&dryRun=All&force=true",
				"objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200}}`,
			outcome: facts.OutcomeDryRun},
		{name: "a name that merely contains dryRun is not a dry run",
			event: `{"level":"Metadata","auditID":"a8","stage":"ResponseComplete","verb":"delete",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps/dryRun=All",
				"objectRef":{"resource":"configmaps","namespace":"team-a","name":"dryRun=All","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200}}`,
			outcome: facts.OutcomeQueued,
			want:    facts.Fact{AuditID: "a8", Stream: cms, Version: "v1", Verb: "delete", Namespace: "team-a", Name: "dryRun=All", Actor: bob}},
		{name: "a write without a responseStatus is not known to have succeeded",
			event: `{"level":"Metadata","auditID":"a9","stage":"ResponseComplete","verb":"create",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps","objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","apiVersion":"v1"}}`,
			outcome: facts.OutcomeFailedRequest},
		{name: "a webhook's refusal",
			event: `{"level":"Metadata","auditID":"a10","stage":"ResponseComplete","verb":"create",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps","objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","apiVersion":"v1"},
				"responseStatus":{"metadata":{},"status":"Failure","reason":"Forbidden","code":403}}`,
			outcome: facts.OutcomeFailedRequest},
		{name: "a panic stage", event: `{"level":"Metadata","auditID":"a11","stage":"Panic","verb":"create",` + user + `}`,
			outcome: facts.OutcomeStage},
		{name: "an unknown verb", event: `{"level":"Metadata","auditID":"a12","stage":"ResponseComplete","verb":"escalate",` + user + `,
				"responseStatus":{"metadata":{},"code":200}}`,
			outcome: facts.OutcomeReadOnlyOrUnknownVerb},
		{name: "an eviction", event: `{"level":"Metadata","auditID":"a13","stage":"ResponseComplete","verb":"create",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/pods/p/eviction",
				"objectRef":{"resource":"pods","namespace":"team-a","name":"p","apiVersion":"v1","subresource":"eviction"},"responseStatus":{"metadata":{},"code":201}}`,
			outcome: facts.OutcomeNonScaleSubresource},
		{name: "a non-resource write has no type to join on",
			event: `{"level":"Metadata","auditID":"a14","stage":"ResponseComplete","verb":"delete",` + user + `,
				"requestURI":"/logs/x","responseStatus":{"metadata":{},"code":200}}`,
			outcome: facts.OutcomeNoAttributionFact},
		{name: "a write that names nothing",
			event: `{"level":"Metadata","auditID":"a15","stage":"ResponseComplete","verb":"create",` + user + `,
				"requestURI":"/api/v1/namespaces/team-a/configmaps","objectRef":{"resource":"configmaps","namespace":"team-a","apiVersion":"v1"},
				"responseStatus":{"metadata":{},"code":201},"responseObject":"garbage"}`,
			outcome: facts.OutcomeNoAttributionFact},
		{name: "an impersonatedUser without a name does not replace the user",
			event: `{"level":"Metadata","auditID":"a16","stage":"ResponseComplete","verb":"delete",` + user + `,"impersonatedUser":{},
				"requestURI":"/api/v1/namespaces/team-a/configmaps/c","objectRef":{"resource":"configmaps","namespace":"team-a","name":"c","apiVersion":"v1"},
				"responseStatus":{"metadata":{},"code":200}}`,
			outcome: facts.OutcomeQueued,
			want:    facts.Fact{AuditID: "a16", Stream: cms, Version: "v1", Verb: "delete", Namespace: "team-a", Name: "c", Actor: bob}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := event(t, tc.event)
			fact, outcome := facts.Extract(&ev, "prod")
			require.Equal(t, tc.outcome, outcome)
			require.Equal(t, tc.want, fact)
		})
	}
}

// TestOutcomeCategories: only queued is accepted, and only the two loss
// paths are errors.
func TestOutcomeCategories(t *testing.T) {
	for _, o := range facts.Outcomes() {
		want := facts.CategoryRejected
		switch o {
		case facts.OutcomeQueued:
			want = facts.CategoryAccepted
		case facts.OutcomeNoAttributionFact, facts.OutcomeWriteError:
			want = facts.CategoryError
		}
		require.Equal(t, want, o.Category(), o)
	}
	require.Len(t, facts.Outcomes(), 9)
}
