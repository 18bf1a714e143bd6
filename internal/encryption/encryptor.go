package encryption

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	sopsage "github.com/getsops/sops/v3/age"
	yaml "go.yaml.in/yaml/v3"
)

// maxCached bounds the cache of encrypted output: one entry per object, so
// only a target with more sensitive objects than this ever drops it.
const maxCached = 50_000

// Encryptor encrypts the sensitive objects of one GitTarget. It is safe for
// concurrent use.
type Encryptor struct {
	keys        parsedKeys
	fingerprint string
	// root derives the data keys (datakey.go); nil without identities, and
	// then every file gets a random data key and is never reused.
	root []byte
	// Now stamps sops' lastmodified; a test may fix it.
	Now func() time.Time

	mu sync.Mutex
	// cache maps an object to its last encryption: the plaintext's digest
	// and the ciphertext made for it. It keeps output stable within the
	// process when the operator cannot read its files back (recipients
	// only), and spares decrypting the file when it can.
	cache map[string]cached
}

type cached struct {
	digest     [sha256.Size]byte
	ciphertext []byte
}

// New checks the keys and builds an Encryptor. Errors say which key is
// wrong and never contain identity material.
func New(k Keys) (*Encryptor, error) {
	p, err := parseKeys(k)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte("recipients=" + strings.Join(p.recipients, ",") + ";decryptable=" + strings.Join(p.decryptable, ",")))
	return &Encryptor{keys: p, fingerprint: hex.EncodeToString(sum[:8]), root: keyRoot(p.identities), Now: time.Now,
		cache: map[string]cached{}}, nil
}

// Recipients are the age public keys files are encrypted to, sorted.
func (e *Encryptor) Recipients() []string { return append([]string(nil), e.keys.recipients...) }

// CanDecrypt reports whether the Encryptor holds identities, so it can read
// its files back and keep ciphertext stable across restarts.
func (e *Encryptor) CanDecrypt() bool { return len(e.keys.identities) > 0 }

// Fingerprint changes when the recipients or the identities change; "" for
// a nil Encryptor. It holds no key material.
func (e *Encryptor) Fingerprint() string {
	if e == nil {
		return ""
	}
	return e.fingerprint
}

// Encrypt returns plaintext (one YAML document) as a SOPS document. object
// names the object for the cache; existing is its current document in Git,
// nil when it has none. When existing already holds this plaintext for
// these recipients it is returned as it is; when the Encryptor can read it,
// its data key and IVs are reused so only changed values change.
func (e *Encryptor) Encrypt(object string, plaintext, existing []byte) ([]byte, error) {
	return e.EncryptTree(object, plaintext, nil, existing)
}

// EncryptTree is Encrypt with plaintext's tree when the caller holds it (the
// one sanitize rendered it from): the tree is read instead of parsing
// plaintext. A nil tree parses plaintext. The tree is not modified.
func (e *Encryptor) EncryptTree(object string, plaintext []byte, tree *yaml.Node, existing []byte) ([]byte, error) {
	digest := sha256.Sum256(plaintext)
	e.mu.Lock()
	defer e.mu.Unlock()
	last, hit := e.cache[object]
	hit = hit && last.digest == digest
	if hit && existing != nil && bytes.Equal(last.ciphertext, existing) {
		return existing, nil
	}
	if existing != nil && e.CanDecrypt() {
		// A file the operator cannot reuse (other recipients, another
		// tool's rules, tampered) is simply replaced by a new encryption.
		if out, err := e.reencrypt(object, plaintext, tree, existing); err == nil {
			e.remember(object, digest, out)
			return out, nil
		}
	}
	if hit {
		return last.ciphertext, nil
	}
	out, err := e.encryptNew(object, plaintext, tree)
	if err != nil {
		return nil, err
	}
	e.remember(object, digest, out)
	return out, nil
}

func (e *Encryptor) remember(object string, digest [sha256.Size]byte, ciphertext []byte) {
	if len(e.cache) >= maxCached {
		e.cache = map[string]cached{}
	}
	e.cache[object] = cached{digest: digest, ciphertext: ciphertext}
}

// Decrypt returns the plaintext YAML of a SOPS document the Encryptor's
// identities can read.
func (e *Encryptor) Decrypt(ciphertext []byte) ([]byte, error) {
	o, err := e.open(ciphertext)
	if err != nil {
		return nil, err
	}
	return renderDocument(o.branch, nil)
}

// encryptNew encrypts with fresh IVs under the object's data key: the
// derived one when the Encryptor holds identities, else a random one.
func (e *Encryptor) encryptNew(object string, plaintext []byte, tree *yaml.Node) ([]byte, error) {
	b, err := loadPlain(plaintext, tree)
	if err != nil {
		return nil, err
	}
	dataKey := make([]byte, 32)
	if e.root != nil {
		dataKey, err = e.objectDataKey(object)
	} else if _, err = rand.Read(dataKey); err != nil {
		err = fmt.Errorf("generating a data key: %w", err)
	}
	if err != nil {
		return nil, err
	}
	stanzas, err := e.wrapDataKey(dataKey)
	if err != nil {
		return nil, err
	}
	c, err := newValueCipher(dataKey)
	if err != nil {
		return nil, err
	}
	return e.seal(b, stanzas, c)
}

// reencrypt encrypts plaintext with existing's data key and the cipher that
// decrypted it, which remembers the IV of every value: unchanged values
// keep their ciphertext. An unchanged plaintext returns existing itself.
func (e *Encryptor) reencrypt(object string, plaintext []byte, tree *yaml.Node, existing []byte) ([]byte, error) {
	if e.root == nil {
		return nil, errors.New("no derived data key to recognise the file by")
	}
	o, err := e.open(existing)
	if err != nil {
		return nil, err
	}
	if !e.ownsStanzas(o.meta.Age) {
		return nil, errors.New("the file is encrypted to other recipients")
	}
	want, err := e.objectDataKey(object)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(o.dataKey, want) != 1 {
		return nil, errors.New("the file's data key is not the one derived for this object")
	}
	b, err := loadPlain(plaintext, tree)
	if err != nil {
		return nil, err
	}
	if o.meta.EncryptedRegex == encryptedRegex(b) && samePlaintext(o.branch, b) {
		return existing, nil
	}
	return e.seal(b, o.meta.Age, o.cipher)
}

// seal encrypts the tree's values and its MAC, as sops does, and renders
// the document with the data key's stanzas.
func (e *Encryptor) seal(b branch, stanzas []ageStanza, c *valueCipher) ([]byte, error) {
	m := metadata{Age: stanzas, EncryptedRegex: encryptedRegex(b), Version: sopsVersion,
		LastModified: e.Now().UTC().Format(time.RFC3339)}
	rule, err := newEncryptionRule(m.EncryptedRegex)
	if err != nil {
		return nil, err
	}
	mac, err := sealTree(b, rule, c)
	if err != nil {
		return nil, fmt.Errorf("encrypting values: %w", err)
	}
	m.MAC, err = c.encrypt(mac, m.LastModified)
	if err != nil {
		return nil, fmt.Errorf("encrypting the MAC: %w", err)
	}
	return renderDocument(b, &m)
}

// opened is a SOPS document read back: its decrypted tree, metadata, and
// the cipher with its data key, which holds the IV of every value.
type opened struct {
	branch  branch
	meta    metadata
	dataKey []byte
	cipher  *valueCipher
}

// open decrypts a SOPS document the operator wrote and checks its MAC.
func (e *Encryptor) open(ciphertext []byte) (opened, error) {
	if !e.CanDecrypt() {
		return opened{}, errors.New("no age identity to decrypt with")
	}
	b, m, err := splitMetadata(ciphertext)
	if err != nil {
		return opened{}, err
	}
	rule, err := newEncryptionRule(m.EncryptedRegex)
	if err != nil {
		return opened{}, err
	}
	dataKey, err := e.dataKey(m.Age)
	if err != nil {
		return opened{}, err
	}
	c, err := newValueCipher(dataKey)
	if err != nil {
		return opened{}, err
	}
	mac, err := openTree(b, rule, c)
	if err != nil {
		return opened{}, fmt.Errorf("decrypting a SOPS document: %w", err)
	}
	if err := checkMAC(c, m.MAC, m.LastModified, mac); err != nil {
		return opened{}, err
	}
	return opened{branch: b, meta: m, dataKey: dataKey, cipher: c}, nil
}

// dataKey recovers the data key through the first stanza the identities
// open. Only the Encryptor's identities are tried: nothing is read from the
// operator's environment.
func (e *Encryptor) dataKey(stanzas []ageStanza) ([]byte, error) {
	for _, s := range stanzas {
		key := &sopsage.MasterKey{Recipient: s.Recipient, EncryptedKey: s.Enc}
		sopsage.ParsedIdentities(e.keys.identities).ApplyToMasterKey(key)
		if dk, err := key.Decrypt(); err == nil {
			return dk, nil
		}
	}
	return nil, errors.New("none of the identities decrypts the SOPS document's data key")
}

// ownsStanzas reports whether a file's data key is encrypted to exactly
// this Encryptor's recipients, so it may be reused.
func (e *Encryptor) ownsStanzas(stanzas []ageStanza) bool {
	recipients := make([]string, 0, len(stanzas))
	for _, s := range stanzas {
		recipients = append(recipients, s.Recipient)
	}
	return len(recipients) == len(e.keys.recipients) && slices.Equal(sortedUnique(recipients), e.keys.recipients)
}

// wrapDataKey encrypts the data key to every recipient.
func (e *Encryptor) wrapDataKey(dataKey []byte) ([]ageStanza, error) {
	stanzas := make([]ageStanza, 0, len(e.keys.recipients))
	for _, r := range e.keys.recipients {
		key, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, fmt.Errorf("age recipient %s: %w", r, err)
		}
		if err := key.Encrypt(dataKey); err != nil {
			return nil, fmt.Errorf("encrypting the data key to %s: %w", r, err)
		}
		stanzas = append(stanzas, ageStanza{Enc: key.EncryptedKey, Recipient: r})
	}
	return stanzas, nil
}

// loadPlain reads the object's YAML for encryption: its tree when the
// caller has one, else plaintext parsed.
func loadPlain(plaintext []byte, tree *yaml.Node) (branch, error) {
	var b branch
	var err error
	if tree != nil {
		b, err = documentTree(tree)
	} else {
		b, err = parseDocument(plaintext)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the object's YAML: %w", err)
	}
	for _, it := range b {
		switch it.key {
		case metadataKey:
			return nil, errors.New("the object has a top-level sops field, which SOPS reserves for its metadata")
		case "name", "namespace":
			// SOPS matches encrypted_regex against keys at every depth, so
			// encrypting this field would encrypt metadata.name or
			// metadata.namespace too, and the file would no longer say
			// which object it holds.
			return nil, fmt.Errorf("the object has a top-level field %q; encrypting it would encrypt metadata.%s too", it.key, it.key)
		}
	}
	return b, nil
}

// samePlaintext compares two trees as they render, so formatting the YAML
// went through does not count.
func samePlaintext(a, b branch) bool {
	x, errA := renderDocument(a, nil)
	y, errB := renderDocument(b, nil)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}
