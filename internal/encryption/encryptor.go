package encryption

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// maxCached bounds the cache of encrypted output: one entry per object, so
// only a target with more sensitive objects than this ever drops it.
const maxCached = 50_000

// Encryptor encrypts the sensitive objects of one GitTarget. It is safe for
// concurrent use.
type Encryptor struct {
	keys        parsedKeys
	fingerprint string
	// Now stamps sops' lastmodified; a test may fix it.
	Now func() time.Time

	mu sync.Mutex
	// cache maps an object to its last encryption: the plaintext's digest
	// and the ciphertext made for it. It keeps output stable within the
	// process when the operator cannot read its files back (recipients
	// only), and spares sops work when it can.
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
	return &Encryptor{keys: p, fingerprint: hex.EncodeToString(sum[:8]), Now: time.Now, cache: map[string]cached{}}, nil
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
		if out, err := e.reencrypt(plaintext, existing); err == nil {
			e.remember(object, digest, out)
			return out, nil
		}
	}
	if hit {
		return last.ciphertext, nil
	}
	out, err := e.encryptNew(plaintext)
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
	return newStore().EmitPlainFile(o.tree.Branches)
}

// encryptNew encrypts with a new data key.
func (e *Encryptor) encryptNew(plaintext []byte) ([]byte, error) {
	branch, err := loadPlain(plaintext)
	if err != nil {
		return nil, err
	}
	dataKey, group, err := e.newDataKey()
	if err != nil {
		return nil, err
	}
	tree := e.newTree(branch, []sops.KeyGroup{group})
	return seal(tree, dataKey, aes.NewCipher())
}

// reencrypt encrypts plaintext with existing's data key and the cipher that
// decrypted it, whose stash returns the same IV for a value that did not
// change: unchanged values keep their ciphertext. An unchanged plaintext
// returns existing itself.
func (e *Encryptor) reencrypt(plaintext, existing []byte) ([]byte, error) {
	o, err := e.open(existing)
	if err != nil {
		return nil, err
	}
	if !e.ownsKeyGroups(o.tree.Metadata.KeyGroups) {
		return nil, errors.New("the file is encrypted to other recipients")
	}
	branch, err := loadPlain(plaintext)
	if err != nil {
		return nil, err
	}
	tree := e.newTree(branch, o.tree.Metadata.KeyGroups)
	if sameRules(o.tree.Metadata, tree.Metadata) && samePlaintext(o.tree.Branches, tree.Branches) {
		return existing, nil
	}
	return seal(tree, o.dataKey, o.cipher)
}

func (e *Encryptor) newTree(branch sops.TreeBranch, groups []sops.KeyGroup) sops.Tree {
	return sops.Tree{
		Branches: sops.TreeBranches{branch},
		Metadata: sops.Metadata{
			KeyGroups:      groups,
			EncryptedRegex: encryptedRegex(branch),
			Version:        sopsVersion,
			LastModified:   e.Now().UTC().Truncate(time.Second),
		},
	}
}

// opened is a SOPS document read back: its decrypted tree, data key, and
// the cipher that holds the IV of every value.
type opened struct {
	tree    sops.Tree
	dataKey []byte
	cipher  aes.Cipher
}

// open decrypts a SOPS document and checks its MAC.
func (e *Encryptor) open(ciphertext []byte) (opened, error) {
	if !e.CanDecrypt() {
		return opened{}, errors.New("no age identity to decrypt with")
	}
	tree, err := newStore().LoadEncryptedFile(ciphertext)
	if err != nil {
		return opened{}, fmt.Errorf("reading a SOPS document: %w", err)
	}
	dataKey, err := e.dataKey(tree.Metadata)
	if err != nil {
		return opened{}, err
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return opened{}, fmt.Errorf("decrypting a SOPS document: %w", err)
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return opened{}, fmt.Errorf("decrypting the MAC of a SOPS document: %w", err)
	}
	if stored != mac {
		return opened{}, errors.New("the SOPS document's MAC does not match its content: it was modified")
	}
	return opened{tree: tree, dataKey: dataKey, cipher: cipher}, nil
}

// dataKey recovers the data key through the first age key the identities
// open. Only age keys are tried, and only with the Encryptor's identities:
// nothing is read from the operator's environment.
func (e *Encryptor) dataKey(m sops.Metadata) ([]byte, error) {
	for _, group := range m.KeyGroups {
		for _, key := range group {
			ak, ok := key.(*sopsage.MasterKey)
			if !ok {
				continue
			}
			sopsage.ParsedIdentities(e.keys.identities).ApplyToMasterKey(ak)
			if dk, err := ak.Decrypt(); err == nil {
				return dk, nil
			}
		}
	}
	return nil, errors.New("none of the identities decrypts the SOPS document's data key")
}

// ownsKeyGroups reports whether a file's keys are exactly one group of age
// keys for this Encryptor's recipients, so its data key may be reused.
func (e *Encryptor) ownsKeyGroups(groups []sops.KeyGroup) bool {
	if len(groups) != 1 {
		return false
	}
	var recipients []string
	for _, key := range groups[0] {
		ak, ok := key.(*sopsage.MasterKey)
		if !ok {
			return false
		}
		recipients = append(recipients, ak.Recipient)
	}
	return strings.Join(sortedUnique(recipients), ",") == strings.Join(e.keys.recipients, ",") && len(recipients) == len(e.keys.recipients)
}

// newDataKey makes a random data key and encrypts it to every recipient.
func (e *Encryptor) newDataKey() ([]byte, sops.KeyGroup, error) {
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, nil, fmt.Errorf("generating a data key: %w", err)
	}
	group := make(sops.KeyGroup, 0, len(e.keys.recipients))
	for _, r := range e.keys.recipients {
		key, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, nil, fmt.Errorf("age recipient %s: %w", r, err)
		}
		if err := key.Encrypt(dataKey); err != nil {
			return nil, nil, fmt.Errorf("encrypting the data key to %s: %w", r, err)
		}
		group = append(group, key)
	}
	return dataKey, group, nil
}

// seal encrypts the tree's values and its MAC and renders the document.
func seal(tree sops.Tree, dataKey []byte, cipher aes.Cipher) ([]byte, error) {
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, fmt.Errorf("encrypting values: %w", err)
	}
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fmt.Errorf("encrypting the MAC: %w", err)
	}
	out, err := newStore().EmitEncryptedFile(tree)
	if err != nil {
		return nil, fmt.Errorf("rendering the SOPS document: %w", err)
	}
	return out, nil
}

// newStore renders YAML with two-space indentation, like the operator's
// plaintext files.
func newStore() *sopsyaml.Store { return sopsyaml.NewStore(&config.YAMLStoreConfig{Indent: 2}) }

// loadPlain parses one YAML document for encryption.
func loadPlain(plaintext []byte) (sops.TreeBranch, error) {
	branches, err := newStore().LoadPlainFile(plaintext)
	if err != nil {
		return nil, fmt.Errorf("parsing the object's YAML: %w", err)
	}
	if len(branches) != 1 {
		return nil, fmt.Errorf("want one YAML document to encrypt, got %d", len(branches))
	}
	for _, item := range branches[0] {
		if item.Key == "sops" {
			return nil, errors.New("the object has a top-level sops field, which SOPS reserves for its metadata")
		}
	}
	return branches[0], nil
}

// samePlaintext compares two trees as sops renders them, so formatting the
// YAML went through does not count.
func samePlaintext(a, b sops.TreeBranches) bool {
	store := newStore()
	x, errA := store.EmitPlainFile(a)
	y, errB := store.EmitPlainFile(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

// sameRules reports whether a file read back was encrypted by the rules the
// Encryptor applies now: a file that leaves a value readable the rules
// would encrypt (a human's edit, an older rule) is re-encrypted.
func sameRules(have, want sops.Metadata) bool {
	return have.EncryptedRegex == want.EncryptedRegex && have.UnencryptedRegex == "" &&
		have.UnencryptedSuffix == "" && have.EncryptedSuffix == "" &&
		have.UnencryptedCommentRegex == "" && have.EncryptedCommentRegex == "" && !have.MACOnlyEncrypted
}
