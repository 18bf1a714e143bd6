// Package redact keeps credentials that ride in a URL's user info out of
// everything the operator writes for people to read: condition messages,
// log lines, Events, errors and metric labels.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// hidden stands where a password was, as in net/url's URL.Redacted.
const hidden = "xxxxx"

// URL is raw with the password of its user info replaced by "xxxxx", as
// net/url's URL.Redacted does; the user name stays, so the message still
// says who. A URL net/url cannot parse loses everything up to its last '@'
// instead, and anything without "://" (scp-like user@host:path,
// host:port) has no password to hide and is returned as it is.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	if userinfo := unparsedUserinfo(rest); userinfo != "" {
		rest = hidden + "@" + rest[len(userinfo):]
	}
	return scheme + "://" + rest
}

// Text is text with every appearance of raw's password replaced by
// "xxxxx", as written in raw, decoded and re-encoded: an error a library
// composed from the URL (a parse error quotes it whole) is then safe to
// show too.
func Text(text, raw string) string {
	for _, form := range passwordForms(raw) {
		if form != "" {
			text = strings.ReplaceAll(text, form, hidden)
		}
	}
	return text
}

// passwordForms are the ways raw's password may be written: as in raw,
// decoded, and encoded as a path or a query would encode it.
func passwordForms(raw string) []string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil
	}
	userinfo := unparsedUserinfo(rest)
	if u, err := url.Parse(raw); err == nil {
		// net/url's own split: the last '@' before the path.
		authority, _, _ := strings.Cut(rest, "/")
		userinfo = authority[:strings.LastIndexByte(authority, '@')+1]
		if u.User == nil {
			return nil
		}
	}
	_, written, ok := strings.Cut(strings.TrimSuffix(userinfo, "@"), ":")
	if !ok || written == "" {
		return nil
	}
	forms := []string{written, url.PathEscape(written), url.QueryEscape(written)}
	if decoded, err := url.PathUnescape(written); err == nil {
		forms = append(forms, decoded, url.PathEscape(decoded), url.QueryEscape(decoded))
	}
	return forms
}

// unparsedUserinfo is, for a URL net/url refused, everything up to and
// with the last '@' before any query or fragment: which part was meant as
// the user info is unknowable, so as much as may be is hidden.
func unparsedUserinfo(rest string) string {
	if end := strings.IndexAny(rest, "?#"); end >= 0 {
		rest = rest[:end]
	}
	return rest[:strings.LastIndexByte(rest, '@')+1]
}

// urlPassword matches the password of a URL's user info in free text.
var urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*):[^\s/@]*@`)

// URLsIn is text with the password of every URL in it replaced by
// "xxxxx", for text whose URLs are not known (an Event note made from a
// condition message): a last guard, not the way messages are made safe.
func URLsIn(text string) string {
	return urlPassword.ReplaceAllString(text, "${1}:"+hidden+"@")
}
