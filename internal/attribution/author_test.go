package attribution

import (
	"net/mail"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/facts"
)

func TestGitAuthor(t *testing.T) {
	unresolved := branch.Author{
		Name:  "unknown (attribution unresolved)",
		Email: "attribution-unresolved@gitops-reverser.invalid",
		Kind:  branch.AuthorUnresolved,
	}
	for _, tc := range []struct {
		name  string
		actor *facts.Actor
		want  branch.Author
	}{
		{"no actor", nil, unresolved},
		{"an actor without a username", &facts.Actor{Username: "  ", DisplayName: "Alice", Email: "alice@example.com"}, unresolved},
		{
			"a human with both OIDC claims",
			&facts.Actor{Username: "oidc:248289761001", DisplayName: "alice", Email: "alice@example.com"},
			branch.Author{Name: "alice", Email: "alice@example.com", Kind: branch.AuthorUser},
		},
		{
			"a human without claims: the username and an email derived from it",
			&facts.Actor{Username: "alice", Groups: []string{"system:authenticated"}},
			branch.Author{Name: "alice", Email: "alice@noreply.cluster.local", Kind: branch.AuthorUser},
		},
		{
			"a human without claims whose username is an email: that email",
			&facts.Actor{Username: "alice@example.com", Groups: []string{"system:authenticated"}},
			branch.Author{Name: "alice@example.com", Email: "alice@example.com", Kind: branch.AuthorUser},
		},
		{
			"a username that is an email after the API server's prefix: that email",
			&facts.Actor{Username: "oidc:alice@example.com"},
			branch.Author{Name: "oidc:alice@example.com", Email: "alice@example.com", Kind: branch.AuthorUser},
		},
		{
			"a username with an '@' that is no address: an email derived from it",
			&facts.Actor{Username: "https://issuer.example#alice@example.com"},
			branch.Author{Name: "https://issuer.example#alice@example.com", Email: "httpsissuer.examplealiceexample.com@noreply.cluster.local", Kind: branch.AuthorUser},
		},
		{
			"a display name only",
			&facts.Actor{Username: "oidc:alice", DisplayName: " Alice Example "},
			branch.Author{Name: "Alice Example", Email: "oidcalice@noreply.cluster.local", Kind: branch.AuthorUser},
		},
		{
			"an email only",
			&facts.Actor{Username: "oidc:alice", Email: "alice@example.com"},
			branch.Author{Name: "oidc:alice", Email: "alice@example.com", Kind: branch.AuthorUser},
		},
		{
			"an invalid OIDC email falls back to the derived one",
			&facts.Actor{Username: "oidc:alice", DisplayName: "Alice", Email: "not an address"},
			branch.Author{Name: "Alice", Email: "oidcalice@noreply.cluster.local", Kind: branch.AuthorUser},
		},
		{
			"an OIDC email with a display name around it is not a bare address",
			&facts.Actor{Username: "oidc:alice", Email: "Alice <alice@example.com>"},
			branch.Author{Name: "oidc:alice", Email: "oidcalice@noreply.cluster.local", Kind: branch.AuthorUser},
		},
		{
			"a display name Git cannot hold falls back to the username",
			&facts.Actor{Username: "oidc:alice", DisplayName: "Alice\nAuthor: mallory <m@example.com>"},
			branch.Author{Name: "oidc:alice", Email: "oidcalice@noreply.cluster.local", Kind: branch.AuthorUser},
		},
		{
			"the spec's service account",
			&facts.Actor{Username: "system:serviceaccount:flux-system:kustomize-controller",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:flux-system"}},
			branch.Author{
				Name:  "system:serviceaccount:flux-system:kustomize-controller",
				Email: "systemserviceaccountflux-systemkustomize-controller@noreply.cluster.local",
				Kind:  branch.AuthorServiceAccount,
			},
		},
		{
			"a service account is named by its own identity even with claims set by an impersonator",
			&facts.Actor{Username: "system:serviceaccount:team-a:deployer", DisplayName: "Alice", Email: "alice@example.com"},
			branch.Author{
				Name:  "system:serviceaccount:team-a:deployer",
				Email: "systemserviceaccountteam-adeployer@noreply.cluster.local",
				Kind:  branch.AuthorServiceAccount,
			},
		},
		{
			"a system user that is not a service account is a user",
			&facts.Actor{Username: "system:kube-controller-manager"},
			branch.Author{Name: "system:kube-controller-manager", Email: "systemkube-controller-manager@noreply.cluster.local", Kind: branch.AuthorUser},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, GitAuthor(tc.actor))
		})
	}
}

// Whatever the username (the hashes are sha256sum of it, cut to 16 hex
// digits), the derived email is one valid bare address under
// noreply.cluster.local, and the same username always derives the same one.
func TestDerivedEmail(t *testing.T) {
	for _, tc := range []struct{ username, want string }{
		{"system:serviceaccount:flux-system:kustomize-controller", "systemserviceaccountflux-systemkustomize-controller@noreply.cluster.local"},
		{"alice@example.com", "aliceexample.com@noreply.cluster.local"},
		{"Alice_B+ops", "Alice_B+ops@noreply.cluster.local"},
		{"oidc:José Núñez", "oidcJosNez@noreply.cluster.local"},
		{".a..b:.c.", "a.b.c@noreply.cluster.local"},
		{"<>\"(),;[]\\ ", "user-" + "b940e179c7ca1e9b" + "@noreply.cluster.local"},
		{"李雷", "user-" + "3a47328a607f3e0a" + "@noreply.cluster.local"},
	} {
		t.Run(tc.username, func(t *testing.T) {
			got := DerivedEmail(tc.username)
			require.Equal(t, tc.want, got)
			addr, err := mail.ParseAddress(got)
			require.NoError(t, err)
			require.Equal(t, got, addr.Address)
		})
	}
}
