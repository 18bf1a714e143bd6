package encryption

import (
	"regexp"
	"slices"
	"strings"
)

// sopsVersion is written into every file's metadata, as the sops CLI of
// the library's version would. A test keeps it equal to
// sops/version.Version; that package is not linked for one string (it
// brings a CLI framework).
const sopsVersion = "3.13.3"

// SecretEncryptedRegex is the encryption rule for core Secrets and for
// files a human creates below the target: data and stringData values are
// encrypted, the rest stays readable (the Flux convention).
const SecretEncryptedRegex = `^(data|stringData)$`

// readableFields stay plaintext in every encrypted file: the planner reads
// an object's identity from them, and they carry no value.
var readableFields = []string{"apiVersion", "kind", "metadata"}

// encryptedRegex is the sops encrypted_regex for an object: every top-level
// field but apiVersion, kind and metadata (and a Secret's type and
// immutable flag). sops applies it to keys at any depth, so it can only
// encrypt more than the top-level fields, never less.
func encryptedRegex(b branch) string {
	readable := readableFields
	if isCoreSecret(b) {
		readable = append(slices.Clone(readable), "type", "immutable")
	}
	fields := []string{"data", "stringData"}
	for _, it := range b {
		if !slices.Contains(readable, it.key) && !slices.Contains(fields, it.key) {
			fields = append(fields, it.key)
		}
	}
	slices.Sort(fields)
	for i, f := range fields {
		fields[i] = regexp.QuoteMeta(f)
	}
	return "^(" + strings.Join(fields, "|") + ")$"
}

func isCoreSecret(b branch) bool {
	var apiVersion, kind any
	for _, it := range b {
		switch it.key {
		case "apiVersion":
			apiVersion = it.value
		case "kind":
			kind = it.value
		}
	}
	return apiVersion == "v1" && kind == "Secret"
}

// SopsConfig is the .sops.yaml staged at the target root with the first
// write: a human who creates or edits an encrypted file below it (running
// sops from that folder) encrypts to the same recipients. Decryption does
// not need it: every file names its own recipients.
func (e *Encryptor) SopsConfig() []byte {
	return []byte("# Written by GitOps Reverser with its first write to this folder.\n" +
		"# sops reads this file when it creates or re-keys a file below this folder (run\n" +
		"# it from here). Decrypting needs only an age identity of one recipient:\n" +
		"#   SOPS_AGE_KEY_FILE=key.txt sops -d <file>.sops.yaml\n" +
		"creation_rules:\n" +
		"  - path_regex: '\\.sops\\.yaml$'\n" +
		"    encrypted_regex: '" + SecretEncryptedRegex + "'\n" +
		"    age: " + strings.Join(e.keys.recipients, ",") + "\n")
}
