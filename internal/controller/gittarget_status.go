package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// targetConditions sets a GitTarget's domain conditions and derives the
// kstatus summary from them: the first domain condition that is not True
// explains Ready, and whether a human is needed (Stalled) or not
// (Reconciling) comes from how the step that set it classified it.
type targetConditions struct {
	conditionSet
	stalled, reconciling bool
	// suspended is spec.suspend: it takes Ready whatever the domain
	// conditions say, which still explain the rest.
	suspended bool
}

func newTargetConditions(list *[]metav1.Condition, generation int64) *targetConditions {
	return &targetConditions{conditionSet: newConditionSet(list, generation)}
}

func (c *targetConditions) setBool(typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	c.set(typ, status, reason, msg)
}

// block sets a domain condition False: only a human can clear it.
func (c *targetConditions) block(typ, reason, msg string) {
	c.setBool(typ, false, reason, msg)
	c.stalled = true
}

// wait sets a domain condition False that is expected to clear on its own.
func (c *targetConditions) wait(typ, reason, msg string) {
	c.setBool(typ, false, reason, msg)
	c.reconciling = true
}

// targetReadyConditions must all be True, for this generation, for Ready.
func targetReadyConditions() []string {
	return []string{
		v1alpha3.ConditionValidated, v1alpha3.ConditionClusterProviderReady, v1alpha3.ConditionSourceClusterReachable,
		v1alpha3.ConditionGitPathAccepted, v1alpha3.ConditionObjectsWritten, v1alpha3.ConditionStreamsRunning,
	}
}

// summarize sets Ready, Reconciling and Stalled.
func (c *targetConditions) summarize() {
	if c.suspended {
		c.markSuspended("spec.suspend is true: changes are watched but not written to Git; " +
			"set it to false to resume, and one commit brings Git to the cluster's state")
		return
	}
	for _, typ := range targetReadyConditions() {
		cond := c.find(typ)
		if cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == c.generation {
			continue
		}
		reason, msg := v1alpha3.ReasonProgressing, typ+" has not been checked yet"
		if cond != nil && cond.ObservedGeneration == c.generation {
			reason, msg = cond.Reason, cond.Message
		}
		if c.stalled {
			c.markStalled(reason, msg)
		} else {
			c.markReconciling(reason, msg)
		}
		return
	}
	c.markReady(v1alpha3.ReasonSucceeded, "mirroring: every stream is running and the Git path is accepted")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// patchTargetStatus writes the status with one merge patch, computed
// against the object the reconcile read; the patch carries its
// resourceVersion, so a read that missed a newer write fails with a
// conflict instead of silently leaving that write standing (a patch that
// finds nothing to change against a stale copy sends nothing).
func patchTargetStatus(ctx context.Context, c ctrl.Client, base, target *v1alpha3.GitTarget) error {
	if err := c.Status().Patch(ctx, target, ctrl.MergeFromWithOptions(base, ctrl.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching the status of GitTarget %s/%s: %w", target.Namespace, target.Name, err)
	}
	return nil
}
