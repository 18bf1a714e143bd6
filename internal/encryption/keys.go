package encryption

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
	"time"

	"filippo.io/age"
)

// Keys are what an Encryptor is built from.
type Keys struct {
	// Recipients are age public keys (age1...) every file is encrypted to.
	Recipients []string
	// Identities are age identity files (one AGE-SECRET-KEY-1... per line,
	// blank lines and # comments allowed). Their recipients are added, and
	// they let the operator read its files back, which keeps ciphertext
	// stable across restarts.
	Identities []string
}

// parsedKeys are Keys checked and normalized: recipients sorted and
// unique, each identity's recipient among them.
type parsedKeys struct {
	recipients []string
	identities []age.Identity
	// decryptable are the recipients the identities stand for.
	decryptable []string
}

func parseKeys(k Keys) (parsedKeys, error) {
	var p parsedKeys
	for i, r := range k.Recipients {
		r = strings.TrimSpace(r)
		if err := checkRecipient(r); err != nil {
			return parsedKeys{}, fmt.Errorf("recipient %d (%q): %w", i+1, r, err)
		}
		p.recipients = append(p.recipients, r)
	}
	for i, file := range k.Identities {
		ids, recipients, err := ParseIdentities(file)
		if err != nil {
			return parsedKeys{}, fmt.Errorf("identity file %d: %w", i+1, err)
		}
		p.identities = append(p.identities, ids...)
		p.decryptable = append(p.decryptable, recipients...)
	}
	p.recipients = sortedUnique(append(p.recipients, p.decryptable...))
	p.decryptable = sortedUnique(p.decryptable)
	if len(p.recipients) == 0 {
		return parsedKeys{}, fmt.Errorf("no age recipient: name at least one recipient or identity")
	}
	return p, nil
}

// checkRecipient accepts the native age public keys: X25519 (age1...) and
// the post-quantum hybrid (age1pq1...). Plugin and SSH recipients are
// refused: they would make sops run programs or need an agent.
func checkRecipient(r string) error {
	var err error
	if strings.HasPrefix(r, "age1pq1") {
		_, err = age.ParseHybridRecipient(r)
	} else {
		_, err = age.ParseX25519Recipient(r)
	}
	if err != nil {
		return fmt.Errorf("not an age public key (age1...): %w", err)
	}
	return nil
}

// ParseIdentities reads an age identity file and returns its identities and
// their recipients. Errors name the line, never its content: it is private
// key material.
func ParseIdentities(file string) ([]age.Identity, []string, error) {
	var ids []age.Identity
	var recipients []string
	scanner := bufio.NewScanner(strings.NewReader(file))
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parsed, err := age.ParseIdentities(strings.NewReader(line))
		if err != nil || len(parsed) != 1 {
			return nil, nil, fmt.Errorf("line %d is not an age identity (AGE-SECRET-KEY-1...)", n)
		}
		r, err := recipientOf(parsed[0])
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		ids = append(ids, parsed[0])
		recipients = append(recipients, r)
	}
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("no age identity (AGE-SECRET-KEY-1...) found")
	}
	return ids, recipients, nil
}

func recipientOf(id age.Identity) (string, error) {
	switch id := id.(type) {
	case *age.X25519Identity:
		return id.Recipient().String(), nil
	case *age.HybridIdentity:
		return id.Recipient().String(), nil
	}
	return "", fmt.Errorf("an age identity of type %T has no known recipient", id)
}

// GenerateIdentity makes a new X25519 identity and returns it as an identity
// file in age-keygen's format (usable as SOPS_AGE_KEY_FILE), with its
// recipient.
func GenerateIdentity(now time.Time) (file, recipient string, err error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", fmt.Errorf("generating an age identity: %w", err)
	}
	recipient = id.Recipient().String()
	file = fmt.Sprintf("# created: %s\n# public key: %s\n%s\n", now.UTC().Format(time.RFC3339), recipient, id.String())
	return file, recipient, nil
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
