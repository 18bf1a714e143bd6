package gogit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// knownHosts is a known_hosts file held in memory. x/crypto's knownhosts
// and go-git's helper both read files, and this forge writes nothing to
// disk, so the matching rules are implemented here: host names and
// [host]:port forms, * and ? wildcards, !negations, hashed (|1|) entries and
// @revoked keys. @cert-authority lines are ignored: host certificates are
// not trusted.
type knownHosts struct {
	entries []knownHostEntry
}

type knownHostEntry struct {
	// patterns are the comma-separated host field of the line.
	patterns []string
	key      ssh.PublicKey
	revoked  bool
}

func parseKnownHosts(data []byte) (*knownHosts, error) {
	hosts := &knownHosts{}
	rest := data
	for {
		marker, patterns, key, _, next, err := ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parsing known_hosts: %w", err)
		}
		rest = next
		switch marker {
		case "":
		case "revoked":
		case "cert-authority":
			continue
		default:
			return nil, fmt.Errorf("parsing known_hosts: unknown marker @%s", marker)
		}
		hosts.entries = append(hosts.entries, knownHostEntry{patterns: patterns, key: key, revoked: marker == "revoked"})
	}
	if len(hosts.entries) == 0 {
		return nil, errors.New("known_hosts holds no host keys")
	}
	return hosts, nil
}

// hostKeyError says the server's host key is not one known_hosts trusts
// for it; it reaches the caller wrapped in go-git's and x/crypto's errors.
type hostKeyError struct {
	host      string
	presented ssh.PublicKey
	known     []ssh.PublicKey
	revoked   bool
}

func (e *hostKeyError) Error() string {
	presented := e.presented.Type() + " " + ssh.FingerprintSHA256(e.presented)
	switch {
	case e.revoked:
		return fmt.Sprintf("SSH host key %s of %s is marked @revoked in known_hosts", presented, e.host)
	case len(e.known) == 0:
		return fmt.Sprintf("SSH host %s is not in known_hosts (it presented %s)", e.host, presented)
	}
	known := make([]string, 0, len(e.known))
	for _, key := range e.known {
		known = append(known, key.Type()+" "+ssh.FingerprintSHA256(key))
	}
	return fmt.Sprintf("SSH host key mismatch for %s: the server presented %s but known_hosts lists %s",
		e.host, presented, strings.Join(known, ", "))
}

// verify is the ssh.HostKeyCallback: the key must be listed for the host
// and not revoked. hostname is the host:port that was dialled.
func (k *knownHosts) verify(hostname string, _ net.Addr, key ssh.PublicKey) error {
	host := knownhosts.Normalize(hostname)
	var known []ssh.PublicKey
	for _, entry := range k.entries {
		if !entry.matches(host) {
			continue
		}
		sameKey := bytes.Equal(entry.key.Marshal(), key.Marshal())
		if entry.revoked && sameKey {
			return &hostKeyError{host: host, presented: key, revoked: true}
		}
		if !entry.revoked {
			known = append(known, entry.key)
		}
	}
	for _, candidate := range known {
		if bytes.Equal(candidate.Marshal(), key.Marshal()) {
			return nil
		}
	}
	return &hostKeyError{host: host, presented: key, known: known}
}

// algorithmsFor lists the host key algorithms to offer when connecting to
// hostWithPort: those of the keys known_hosts trusts for it.
func (k *knownHosts) algorithmsFor(hostWithPort string) []string {
	host := knownhosts.Normalize(hostWithPort)
	var algorithms []string
	seen := map[string]bool{}
	for _, entry := range k.entries {
		if entry.revoked || !entry.matches(host) {
			continue
		}
		for _, algorithm := range hostKeyAlgorithms(entry.key.Type()) {
			if !seen[algorithm] {
				seen[algorithm] = true
				algorithms = append(algorithms, algorithm)
			}
		}
	}
	return algorithms
}

// hostKeyAlgorithms maps a key type to the signature algorithms a server
// may use with it: an RSA key signs with SHA-2 today, ssh-rsa (SHA-1) only
// on old servers.
func hostKeyAlgorithms(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// matches applies OpenSSH's rule: a line matches when some pattern matches
// and no negated pattern does.
func (e knownHostEntry) matches(host string) bool {
	matched := false
	for _, pattern := range e.patterns {
		negated := strings.HasPrefix(pattern, "!")
		pattern = strings.TrimPrefix(pattern, "!")
		if !hostPatternMatches(pattern, host) {
			continue
		}
		if negated {
			return false
		}
		matched = true
	}
	return matched
}

func hostPatternMatches(pattern, host string) bool {
	if strings.HasPrefix(pattern, "|1|") {
		return hashedHostMatches(pattern, host)
	}
	return wildcardMatch(strings.ToLower(pattern), strings.ToLower(host))
}

// hashedHostMatches checks a HashKnownHosts entry, |1|base64(salt)|base64(
// HMAC-SHA1(salt, host)).
func hashedHostMatches(pattern, host string) bool {
	parts := strings.Split(pattern, "|")
	if len(parts) != 4 {
		return false
	}
	salt, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	want, err := base64.StdEncoding.DecodeString(parts[3])
	if err != nil {
		return false
	}
	mac := hmac.New(sha1.New, salt)
	mac.Write([]byte(host))
	return hmac.Equal(mac.Sum(nil), want)
}

// wildcardMatch matches OpenSSH host patterns, where * is any run of
// characters and ? any one character. (path.Match does not fit: it treats
// the brackets of [host]:port as a character class.)
func wildcardMatch(pattern, name string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for i := len(name); i >= 0; i-- {
				if wildcardMatch(pattern[1:], name[i:]) {
					return true
				}
			}
			return false
		case '?':
			if name == "" {
				return false
			}
		default:
			if name == "" || name[0] != pattern[0] {
				return false
			}
		}
		pattern, name = pattern[1:], name[1:]
	}
	return name == ""
}
