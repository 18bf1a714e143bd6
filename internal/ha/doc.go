// Package ha is the membership and branch assignment of several operator
// replicas: one Lease per replica says who is alive (Membership), rendezvous
// hashing says which live replica owns which branch (Owner), and Decide
// turns a view of the live members into the branches to take and to
// release.
//
// It builds on client-go only (no controller-runtime) and reports to an
// Observer, so it imports no Prometheus either. The Assigner
// (assigner.go) acts on the views, through a Host (the engine) that moves
// the work:
//
//  1. the operator builds one Membership per process (the operator
//     namespace, the pod name as Identity, the metrics as Observer) and
//     runs it beside the Assigner;
//  2. on every view, kick and renew period the Assigner calls Decide with
//     the branches the Host knows and the ones it owns; it releases first
//     (the worker commits what it holds, then the branch's claim in Redis
//     is released), then takes (wins the claim, then the Host starts the
//     worker and its GitTargets' watches); it reports Owned and, per branch
//     taken, Handover (why its previous owner let it go) and, for one whose
//     owner was lost, Failover(now - Departure.LastRenewed);
//  3. it Suspends the membership when it cannot renew its claims in time,
//     and Resumes it once Redis answers;
//  4. on graceful shutdown it releases every branch, then Leaves.
//
// The fences are elsewhere: the per-branch claim in Redis decides between
// two replicas whose views briefly disagree, and the forge's
// compare-and-swap on the branch head keeps Git safe from a deposed owner.
package ha
