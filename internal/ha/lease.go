package ha

import (
	"context"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// renewLoop renews the Lease, then waits RetryPeriod from the end of that
// renewal (or a Resume) before the next, until ctx ends. So two writes are
// always at least a period apart, and a failed renewal waits for the next
// period too: RenewDeadline leaves room for several periods before this
// replica fences itself.
func (m *Membership) renewLoop(ctx context.Context) {
	timer := m.cfg.Clock.NewTimer(m.cfg.RetryPeriod)
	defer timer.Stop()
	for {
		if m.renewOnce(ctx) {
			m.collect(ctx)
		}
		if !timer.Stop() {
			// A tick left over from before a Resume must not start the
			// next period early.
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(m.cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		case <-m.resume:
		}
	}
}

// renewOnce makes one renewal unless suspended or gone. Its success moves
// this replica's own deadline to the time the write was sent (not when it
// returned: the API server may have applied it at any time since), so our
// deadline is never later than the one the others derive from it.
func (m *Membership) renewOnce(ctx context.Context) bool {
	m.renewMu.Lock()
	defer m.renewMu.Unlock()
	m.mu.Lock()
	skip := m.self.suspended || m.self.left
	m.mu.Unlock()
	if skip {
		return false
	}
	sent := m.cfg.Clock.Now()
	// A request that hangs must not outlive the deadline it is meant to
	// move; the view fences us meanwhile anyway.
	rctx, cancel := context.WithTimeout(ctx, m.cfg.RenewDeadline)
	defer cancel()
	if err := m.writeLease(rctx, sent); err != nil {
		if ctx.Err() == nil {
			m.cfg.Log.Info("renewing the member lease failed; retrying next period", "lease", m.leaseName, "error", err.Error())
		}
		return false
	}
	m.mu.Lock()
	m.self.renewed = true
	m.self.lastRenew = sent
	m.mu.Unlock()
	m.kick()
	return true
}

// collect deletes the Leases of members dead for CollectAfter, if this
// replica is the collector (see collectable). The delete is conditional on
// the Lease's UID and resourceVersion as we saw them dead: one renewed or
// recreated meanwhile is left alone. At most one per period, so a backlog
// of old Leases does not burst.
func (m *Membership) collect(ctx context.Context) {
	m.mu.Lock()
	names := collectable(m.cfg.Clock.Now(), m.view, m.observed, m.cfg.CollectAfter)
	var o observation
	if len(names) > 0 {
		o = m.observed[names[0]]
	}
	m.mu.Unlock()
	if len(names) == 0 {
		return
	}
	uid := types.UID(o.uid)
	err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, names[0], metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &o.resourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		m.cfg.Log.Info("deleting a dead member's lease failed; retrying next period", "lease", names[0], "error", err.Error())
	}
}

// writeLease makes exactly one write: an update of the Lease we know, or,
// when we know none, a create after a read (a Lease left by an earlier
// process of the same name is taken over by an update). A conflict or a
// vanished Lease makes us read it again before the next write.
func (m *Membership) writeLease(ctx context.Context, now time.Time) error {
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	if m.lease == nil {
		got, err := leases.Get(ctx, m.leaseName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			created, err := leases.Create(ctx, m.stamp(&coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: m.leaseName, Namespace: m.cfg.Namespace},
			}, now), metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating member lease %s: %w", m.leaseName, err)
			}
			m.lease = created
			return nil
		case err != nil:
			return fmt.Errorf("reading member lease %s: %w", m.leaseName, err)
		}
		m.lease = got
	}
	updated, err := leases.Update(ctx, m.stamp(m.lease.DeepCopy(), now), metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			m.lease = nil
		}
		return fmt.Errorf("renewing member lease %s: %w", m.leaseName, err)
	}
	m.lease = updated
	return nil
}

// stamp makes lease ours, renewed at now.
func (m *Membership) stamp(lease *coordinationv1.Lease, now time.Time) *coordinationv1.Lease {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[GroupLabel] = m.cfg.Group
	identity := m.cfg.Identity
	seconds := int32(math.Ceil(m.cfg.LeaseDuration.Seconds()))
	renewed := metav1.NewMicroTime(now)
	if h := lease.Spec.HolderIdentity; h == nil || *h != identity || lease.Spec.AcquireTime == nil {
		lease.Spec.AcquireTime = &renewed
	}
	lease.Spec.HolderIdentity = &identity
	lease.Spec.LeaseDurationSeconds = &seconds
	lease.Spec.RenewTime = &renewed
	if m.cfg.StoreContact != nil {
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		lease.Annotations[StoreContactAnnotation] = storeContactValue(m.cfg.StoreContact())
	}
	return lease
}

// StoreContactAnnotation is the Lease annotation with the time the member
// last reached the shared store, by its own clock ("" before it ever did).
const StoreContactAnnotation = "configbutler.ai/store-contact"

func storeContactValue(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return metav1.NewMicroTime(t).UTC().Format(time.RFC3339Nano)
}

// Leave drops this replica from its own view, stops renewing and deletes
// its Lease, so the others see it gone at once rather than after
// LeaseDuration. Call it on graceful shutdown, after handing the branches
// over, then end Run's context.
func (m *Membership) Leave(ctx context.Context) error {
	m.renewMu.Lock()
	defer m.renewMu.Unlock()
	m.mu.Lock()
	m.self.left = true
	m.mu.Unlock()
	// Our own view drops us before the others can see the Lease go.
	m.evaluate()
	opts := metav1.DeleteOptions{}
	if m.lease != nil {
		opts.Preconditions = &metav1.Preconditions{UID: &m.lease.UID}
	}
	err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, m.leaseName, opts)
	// Not found or another UID: the Lease is not ours any more.
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting member lease %s: %w", m.leaseName, err)
	}
	m.lease = nil
	return nil
}
