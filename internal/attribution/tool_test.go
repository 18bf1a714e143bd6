package attribution

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestChangedWithNamesTheManagerOfTheLatestWrite(t *testing.T) {
	at := func(sec int) *metav1.Time {
		return &metav1.Time{Time: time.Date(2026, 12, 2, 15, 0, sec, 0, time.UTC)}
	}
	entry := func(manager string, op metav1.ManagedFieldsOperationType, when *metav1.Time) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: when, APIVersion: "v1", FieldsType: "FieldsV1"}
	}
	status := func(e metav1.ManagedFieldsEntry) metav1.ManagedFieldsEntry {
		e.Subresource = "status"
		return e
	}
	scale := func(e metav1.ManagedFieldsEntry) metav1.ManagedFieldsEntry {
		e.Subresource = "scale"
		return e
	}
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    []string
	}{
		{"no managedFields", nil, nil},
		{"one manager", []metav1.ManagedFieldsEntry{entry("kubectl-create", metav1.ManagedFieldsOperationUpdate, at(1))},
			[]string{"kubectl-create"}},
		{"the latest of several, whatever the list order", []metav1.ManagedFieldsEntry{
			entry("helm", metav1.ManagedFieldsOperationApply, at(9)),
			entry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, at(3)),
			entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, at(5)),
		}, []string{"helm"}},
		{"a later status write is not the change", []metav1.ManagedFieldsEntry{
			entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, at(5)),
			status(entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, at(8))),
		}, []string{"kubectl-edit"}},
		{"only status writes name nobody", []metav1.ManagedFieldsEntry{
			status(entry("kubelet", metav1.ManagedFieldsOperationUpdate, at(8))),
		}, nil},
		{"a /scale write changes what is committed", []metav1.ManagedFieldsEntry{
			entry("kubectl-create", metav1.ManagedFieldsOperationUpdate, at(2)),
			scale(entry("kubectl", metav1.ManagedFieldsOperationUpdate, at(7))),
		}, []string{"kubectl"}},
		{"a tie in the same second names each, sorted", []metav1.ManagedFieldsEntry{
			entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, at(4)),
			entry("argocd-controller", metav1.ManagedFieldsOperationApply, at(4)),
			entry("helm", metav1.ManagedFieldsOperationApply, at(1)),
		}, []string{"argocd-controller", "kubectl-edit"}},
		{"one manager with Apply and Update entries is named once", []metav1.ManagedFieldsEntry{
			entry("kubectl", metav1.ManagedFieldsOperationApply, at(6)),
			entry("kubectl", metav1.ManagedFieldsOperationUpdate, at(6)),
		}, []string{"kubectl"}},
		{"an entry without a time is the oldest", []metav1.ManagedFieldsEntry{
			entry("old-tool", metav1.ManagedFieldsOperationUpdate, nil),
			entry("kubectl-patch", metav1.ManagedFieldsOperationUpdate, at(1)),
		}, []string{"kubectl-patch"}},
		{"entries without a time only", []metav1.ManagedFieldsEntry{
			entry("old-tool", metav1.ManagedFieldsOperationUpdate, nil),
		}, []string{"old-tool"}},
		{"before-first-apply and an empty manager name no tool", []metav1.ManagedFieldsEntry{
			entry("before-first-apply", metav1.ManagedFieldsOperationUpdate, at(9)),
			entry(" ", metav1.ManagedFieldsOperationUpdate, at(9)),
			entry("kubectl", metav1.ManagedFieldsOperationApply, at(2)),
		}, []string{"kubectl"}},
		{"a manager name is made one trailer line", []metav1.ManagedFieldsEntry{
			entry("my\ntool\t v2\r", metav1.ManagedFieldsOperationUpdate, at(1)),
		}, []string{"my tool v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ChangedWith(tc.entries))
		})
	}
}
