package attribution

import (
	"crypto/sha256"
	"encoding/hex"
	"net/mail"
	"strings"
	"unicode"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/facts"
)

// The author of a change attribution ran for and could not name anybody
// (architecture.md, "Author and committer identity in Git"). It is not the
// operator, so that a lost actor stays visible in Git history.
const (
	UnresolvedAuthorName  = "unknown (attribution unresolved)"
	UnresolvedAuthorEmail = "attribution-unresolved@gitops-reverser.invalid"
)

// DerivedEmailDomain is the domain of the email derived from a username
// when the actor has no usable OIDC email.
const DerivedEmailDomain = "noreply.cluster.local"

// GitAuthor is the Git author for a resolved actor, or for none (nil, or an
// actor without a username) when attribution did not resolve.
//
// A human is named by the OIDC display name and email the apiserver mapped
// into user.extra, each falling back to the actor's own identity when
// missing or unusable: the username, and the username as the email when
// it is an address, else an email derived from it. A
// service account is always named by its own Kubernetes identity: it never
// authenticates through OIDC, so display-name or email extras on it can
// only have been set by whoever impersonated it, and a machine identity is
// never presented as a person.
func GitAuthor(actor *facts.Actor) branch.Author {
	if actor == nil || strings.TrimSpace(actor.Username) == "" {
		return branch.Author{Name: UnresolvedAuthorName, Email: UnresolvedAuthorEmail, Kind: branch.AuthorUnresolved}
	}
	username := gitName(actor.Username)
	if strings.HasPrefix(actor.Username, facts.ServiceAccountPrefix) {
		return branch.Author{Name: username, Email: DerivedEmail(actor.Username), Kind: branch.AuthorServiceAccount}
	}
	author := branch.Author{Name: username, Email: usernameEmail(actor.Username), Kind: branch.AuthorUser}
	if name := strings.TrimSpace(actor.DisplayName); name != "" && name == gitName(name) {
		author.Name = name
	}
	if email := strings.TrimSpace(actor.Email); isBareAddress(email) {
		author.Email = email
	}
	return author
}

// usernameEmail is the email a user's own username gives: the username
// itself when it is an address (an OIDC username claim of email, with or
// without a "prefix:" the API server put before it), else the address
// derived from it.
func usernameEmail(username string) string {
	address := username[strings.LastIndexByte(username, ':')+1:]
	if isPlainAddress(address) {
		return address
	}
	return DerivedEmail(username)
}

// isPlainAddress reports whether s is a bare address in the characters
// every mail and Git host takes: a local part of ASCII letters, digits,
// '.', '_', '-' and '+', and a domain name with a dot. A username such as
// "https://issuer#alice@example.com" is a valid address too, but no one's.
func isPlainAddress(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	plain := func(part, extra string) bool {
		return part != "" && strings.IndexFunc(part, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(extra, r))
		}) < 0
	}
	return ok && plain(local, "._-+") && plain(domain, ".-") && strings.Contains(domain, ".") && isBareAddress(s)
}

// DerivedEmail is the stable address a username stands for under
// DerivedEmailDomain, so that every actor's commits carry a complete email
// (architecture.md: system:serviceaccount:flux-system:kustomize-controller
// becomes systemserviceaccountflux-systemkustomize-controller@noreply.cluster.local).
//
// The rule: the local part is the username with every character removed
// that is not an ASCII letter, digit, '.', '_', '-' or '+' (the characters
// valid in an unquoted local part that every mail and Git host takes), and
// with the dots removed that would lead, trail or double up, which a local
// part may not have. A username with nothing left (one written entirely in
// other scripts) becomes "user-" and 16 hex digits of its SHA-256, so it
// still derives a valid address of its own.
func DerivedEmail(username string) string {
	var local strings.Builder
	for _, r := range username {
		switch {
		case r == '.':
			if s := local.String(); s == "" || strings.HasSuffix(s, ".") {
				continue
			}
		case r > unicode.MaxASCII:
			continue
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '-', r == '+':
		default:
			continue
		}
		local.WriteRune(r)
	}
	part := strings.TrimSuffix(local.String(), ".")
	if part == "" {
		sum := sha256.Sum256([]byte(username))
		part = "user-" + hex.EncodeToString(sum[:8])
	}
	return part + "@" + DerivedEmailDomain
}

// gitName is s without what a Git author name cannot hold: the angle
// brackets that delimit the email, and control characters (a newline would
// end the header).
func gitName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// isBareAddress reports whether s is one plain address, local@domain, with
// no display name, comment or quoting around it: anything else an OIDC
// email claim holds is unusable as a Git author email.
func isBareAddress(s string) bool {
	if s == "" || strings.ContainsAny(s, "<>") {
		return false
	}
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Name == "" && addr.Address == s
}
