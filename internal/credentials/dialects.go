package credentials

import (
	"fmt"
	"strconv"
	"strings"
)

// fromSecretData maps a Secret's data, in any supported dialect, onto
// Credentials. source ("Secret ns/name") is named in errors.
func fromSecretData(data map[string][]byte, source string) (Credentials, error) {
	creds := Credentials{
		// Usernames and tokens are identifiers: surrounding whitespace is
		// always an accident (echo's trailing newline in a Secret made from
		// a file), and the forge would refuse it as a wrong credential with
		// no hint why. Passwords and keys are kept byte for byte.
		Username:      trimmedValue(data, "username"),
		Password:      string(firstValue(data, "password")),
		Token:         trimmedValue(data, "token", "bearerToken"),
		SSHPrivateKey: firstValue(data, "ssh-privatekey", "identity", "sshPrivateKey"),
		KnownHosts:    firstValue(data, "known_hosts"),
	}
	creds.SSHPassphrase = string(firstValue(data, "passphrase"))
	if creds.SSHPassphrase == "" && len(creds.SSHPrivateKey) > 0 {
		// Flux stores the passphrase of "identity" under "password".
		creds.SSHPassphrase = creds.Password
	}
	app, err := gitHubAppFromSecretData(data, source)
	if err != nil {
		return Credentials{}, err
	}
	creds.GitHubApp = app
	return creds, nil
}

// The key names of a GitHub App's three parts, operator's first, then the
// Argo CD / Flux names.
const (
	appIDKey              = "appID"
	argoAppIDKey          = "githubAppID"
	installationIDKey     = "installationID"
	argoInstallationIDKey = "githubAppInstallationID"
	appPrivateKeyKey      = "privateKey"
	argoAppPrivateKeyKey  = "githubAppPrivateKey"
)

// gitHubAppFromSecretData returns the App the Secret describes, nil when it
// has none of the App keys, and an error when the App is incomplete or an
// id is not a number: a half-configured App is a mistake the user should
// hear about, not a silent fallback to anonymous access.
func gitHubAppFromSecretData(data map[string][]byte, source string) (*GitHubApp, error) {
	appIDText, appIDKeyUsed := firstPresent(data, appIDKey, argoAppIDKey)
	installationText, installationKeyUsed := firstPresent(data, installationIDKey, argoInstallationIDKey)
	privateKey, _ := firstPresent(data, appPrivateKeyKey, argoAppPrivateKeyKey)
	if appIDKeyUsed == "" && installationKeyUsed == "" && len(privateKey) == 0 {
		return nil, nil
	}
	switch {
	case appIDKeyUsed == "":
		return nil, fmt.Errorf("%w: %s holds GitHub App keys but no App id (%s)", ErrInvalidCredentials, source, appIDKey+"/"+argoAppIDKey)
	case installationKeyUsed == "":
		return nil, fmt.Errorf("%w: %s holds a GitHub App but no installation id (%s)", ErrInvalidCredentials, source, installationIDKey+"/"+argoInstallationIDKey)
	case len(privateKey) == 0:
		return nil, fmt.Errorf("%w: %s holds a GitHub App but no private key (%s)", ErrInvalidCredentials, source, appPrivateKeyKey+"/"+argoAppPrivateKeyKey)
	}
	appID, err := parseID(appIDText, appIDKeyUsed, source)
	if err != nil {
		return nil, err
	}
	installationID, err := parseID(installationText, installationKeyUsed, source)
	if err != nil {
		return nil, err
	}
	return &GitHubApp{AppID: appID, InstallationID: installationID, PrivateKey: privateKey}, nil
}

// parseID reads a GitHub numeric id. The value is not echoed: it sits in a
// Secret, and the key name is enough to find it.
func parseID(value []byte, key, source string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(string(value)), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: key %q in %s must be a positive integer (a GitHub App or installation id)", ErrInvalidCredentials, key, source)
	}
	return id, nil
}

// firstValue returns the value of the first key that is present and not
// empty.
func firstValue(data map[string][]byte, keys ...string) []byte {
	value, _ := firstPresent(data, keys...)
	return value
}

// firstPresent is firstValue that also says which key held the value ("" if
// none did).
func firstPresent(data map[string][]byte, keys ...string) ([]byte, string) {
	for _, key := range keys {
		if value := data[key]; len(value) > 0 {
			return value, key
		}
	}
	return nil, ""
}

func trimmedValue(data map[string][]byte, keys ...string) string {
	return strings.TrimSpace(string(firstValue(data, keys...)))
}
