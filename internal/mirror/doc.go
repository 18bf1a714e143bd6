// Package mirror turns a GitTarget's claims into running watch streams and
// their events into branch-worker writes: the relevance filter
// (controller-owned objects, operation filters, sensitivity), sanitization,
// and a replay's mark-and-sweep.
package mirror
