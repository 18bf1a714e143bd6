// Package ha is the membership and branch assignment of several operator
// replicas: one Lease per replica says who is alive (Membership), rendezvous
// hashing says which live replica owns which branch (Owner), and Decide
// turns a view of the live members into the branches to take and to
// release.
//
// It builds on client-go only (no controller-runtime) and reports to an
// Observer, so it imports no Prometheus either. It decides; it does not
// move work. The owner code that wires it is expected to:
//
//  1. build one Membership per process (Config: the operator namespace,
//     the pod name as Identity, the metrics as Observer) and Run it;
//  2. on every view from Views (or Current), call Decide with the branches
//     it knows and the ones it owns; release first (flush, journal, stop
//     the worker, release the branch's claim in Redis), then take (win the
//     claim, then start the worker and its GitTargets' watches); report
//     Owned, and per moved branch Handover(CauseOf(previous view, view,
//     branch)) and, for a taken branch whose owner departed,
//     Failover(now - Departure.LastRenewed);
//  3. call Suspend when Redis is unreachable and Resume when it is back;
//  4. on graceful shutdown release every branch, then Leave, then end Run.
//
// The fences are elsewhere: the per-branch claim in Redis decides between
// two replicas whose views briefly disagree, and the forge's
// compare-and-swap on the branch head keeps Git safe from a deposed owner.
package ha
