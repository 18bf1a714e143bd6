package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// MaxSegmentBytes is the longest path component the operator writes: 255
// bytes is NAME_MAX on ext4, XFS, btrfs, ZFS and APFS, and 255 UTF-8 bytes
// are never more than the 255 UTF-16 units NTFS allows. A longer component
// is committed by Git without complaint and then cannot be checked out.
const MaxSegmentBytes = 255

// MaxPathBytes is the longest repository-relative path the operator
// writes: half of Linux's PATH_MAX (4096), leaving the other half for the
// directory a clone is checked out in. The canonical path always fits
// (spec.path is at most 512 bytes and its other components are bounded by
// Kubernetes); only a placement template repeating variables can exceed it.
const MaxPathBytes = 2048

// segmentHashHexDigits is how much of the SHA-256 of a shortened name its
// component keeps: 64 bits, so two long names that share a prefix do not
// share a file by accident.
const segmentHashHexDigits = 16

// FitSegment returns the path component for a name followed by suffix
// (".yaml", ".sops.yaml", or "" for a directory). It is name+suffix when
// that is at most MaxSegmentBytes bytes. A longer one is shortened to
//
//	{prefix of name}-{first 16 hex digits of sha256(name)}{suffix}
//
// with the longest prefix that keeps the component within MaxSegmentBytes
// and does not end inside a UTF-8 sequence. The suffix is kept whole, so
// the file's type (plaintext or SOPS) still shows in its name.
//
// The result depends only on its arguments: the same name is shortened the
// same way on every run and every replica, and the shortened form is never
// parsed back. The planner finds a file by the identity of the documents in
// it, not by its name, so a shortened file is updated in place and deleted
// like any other. A short name that happens to equal another's shortened
// form only shares its file, as a placement template may bundle objects.
func FitSegment(name, suffix string) string {
	if len(name)+len(suffix) <= MaxSegmentBytes {
		return name + suffix
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:])[:segmentHashHexDigits]
	cut := max(MaxSegmentBytes-len(suffix)-len("-")-len(hash), 0) // the planner's suffixes are short
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut-- // name[cut] continues the rune before it: cut before that rune
	}
	return name[:cut] + "-" + hash + suffix
}
