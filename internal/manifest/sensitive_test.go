package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func sensitiveUpsert(namespace, name, ciphertext string) manifest.Upsert {
	return manifest.Upsert{ID: secretID(namespace, name), YAML: []byte(encryptedSecretYAML(namespace, name, ciphertext)), Sensitive: true}
}

func TestANewSensitiveObjectGetsItsOwnSopsFile(t *testing.T) {
	ix := newIndex(t, ".", withReadme(".", map[string]string{}))

	result := plan(t, ix, sensitiveUpsert("team-a", "db", "abc"))

	require.Empty(t, result.Refusals)
	require.Equal(t, map[string]string{"team-a/secrets/db.sops.yaml": encryptedSecretYAML("team-a", "db", "abc")}, contents(result))
}

func TestSensitiveObjectsAreNeverCoMingled(t *testing.T) {
	plainCM := configMapYAML("team-a", "app", "v")
	tests := []struct {
		name  string
		files map[string]string
		op    manifest.Op
		want  manifest.RefusalReason
	}{
		{
			name:  "never appended to an existing file at its path",
			files: map[string]string{"team-a/secrets/db.sops.yaml": encryptedSecretYAML("team-a", "other", "x")},
			op:    sensitiveUpsert("team-a", "db", "abc"),
			want:  manifest.RefusalSensitiveShared,
		},
		{
			name:  "never updated in place inside a file with a plaintext document",
			files: map[string]string{"team-a/bundle.yaml": plainCM + "---\n" + encryptedSecretYAML("team-a", "db", "old")},
			op:    sensitiveUpsert("team-a", "db", "new"),
			want:  manifest.RefusalSensitiveShared,
		},
		{
			name: "a plaintext object is never written beside an encrypted one",
			files: map[string]string{"team-a/bundle.yaml": configMapYAML("team-a", "app", "old") + "---\n" +
				encryptedSecretYAML("team-a", "db", "x")},
			op:   upsert(configMapID("team-a", "app"), plainCM),
			want: manifest.RefusalPlaintextBesideEncrypted,
		},
		{
			name: "sensitive YAML must arrive encrypted",
			op: manifest.Upsert{ID: secretID("team-a", "db"), Sensitive: true,
				YAML: []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: team-a\ndata:\n  password: aHVudGVyMg==\n")},
			want: manifest.RefusalNotEncrypted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newIndex(t, ".", withReadme(".", tt.files))
			other := configMapYAML("team-b", "unrelated", "v")

			result := plan(t, ix, tt.op, upsert(configMapID("team-b", "unrelated"), other))

			require.Len(t, result.Refusals, 1)
			require.Equal(t, tt.want, result.Refusals[0].Reason, result.Refusals[0].Error())
			require.Equal(t, map[string]string{"team-b/configmaps/unrelated.yaml": other}, contents(result),
				"the refused object is left alone and the rest of the batch is planned")
		})
	}
}

func TestASensitiveObjectAloneInItsFileIsReEncryptedInPlace(t *testing.T) {
	// A human once committed it at a plaintext-looking path; it stays there.
	ix := newIndex(t, ".", withReadme(".", map[string]string{"secrets/db.yaml": encryptedSecretYAML("team-a", "db", "old")}))

	result := plan(t, ix, sensitiveUpsert("team-a", "db", "new"))

	require.Empty(t, result.Refusals)
	require.Equal(t, map[string]string{"secrets/db.yaml": encryptedSecretYAML("team-a", "db", "new")}, contents(result))
}

func TestASensitiveObjectMayMoveIntoAFileItsOldNeighbourLeft(t *testing.T) {
	bundle := configMapYAML("team-a", "app", "v") + "---\n" + encryptedSecretYAML("team-a", "db", "old")
	ix := newIndex(t, ".", withReadme(".", map[string]string{"team-a/bundle.yaml": bundle}))

	result := plan(t, ix, manifest.Delete{ID: configMapID("team-a", "app")}, sensitiveUpsert("team-a", "db", "new"))

	require.Empty(t, result.Refusals, "deletes are planned first, so the secret is alone by the time it is written")
	require.Equal(t, map[string]string{"team-a/bundle.yaml": "---\n" + encryptedSecretYAML("team-a", "db", "new")}, contents(result))
}

func TestDocumentReturnsAnObjectsCurrentText(t *testing.T) {
	secret := encryptedSecretYAML("team-a", "db", "old")
	ix := newIndex(t, ".", map[string]string{"team-a/bundle.yaml": configMapYAML("team-a", "app", "v") + "---\n# the database\n" + secret})

	doc, ok := ix.Document(secretID("team-a", "db"))
	require.True(t, ok)
	require.Equal(t, secret, string(doc), "the section body: no marker, no leading comment")
	_, ok = ix.Document(secretID("team-a", "absent"))
	require.False(t, ok)
}
