package harness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"code.gitea.io/sdk/gitea"
	"golang.org/x/crypto/ssh"
)

// Identity of the administrator every Gitea instance is created with.
// "admin" itself is a name Gitea reserves.
const (
	giteaAdminUser     = "harness-admin"
	giteaAdminPassword = "harness-password-1"
	giteaAdminEmail    = "harness-admin@example.com"
	// giteaBuiltinSSHUser is the only user name the built-in SSH server
	// accepts; which Gitea user is pushing is decided by the key.
	giteaBuiltinSSHUser = "git"
	// giteaStartAttempts bounds retries when a port FreePort found was
	// taken by another process before Gitea bound it.
	giteaStartAttempts = 3
	giteaReadyTimeout  = 60 * time.Second
	giteaPortTakenLog  = "bind: address already in use"
	giteaStopGrace     = 10 * time.Second
)

// Gitea is a Gitea server built from its Go module (see BinaryPath), with an
// SQLite database, its HTTP API and smart-HTTP Git on one loopback port and
// its built-in SSH server on another. It has one administrator, whose token
// authenticates Client.
type Gitea struct {
	dir         string
	httpPort    int
	sshPort     int
	token       string
	sshHostKey  ssh.PublicKey
	process     *Process
	adminClient *gitea.Client
}

// giteaPaths are the files of one Gitea instance; everything lives under
// the directory given to StartGitea.
type giteaPaths struct {
	binary     string
	staticRoot string // options/, templates/ and public/ built next to the binary
	workDir    string
	config     string
	hostKey    string
}

func newGiteaPaths(binary, dir string) giteaPaths {
	return giteaPaths{
		binary:     binary,
		staticRoot: filepath.Join(filepath.Dir(binary), "static"),
		workDir:    dir,
		config:     filepath.Join(dir, "app.ini"),
		hostKey:    filepath.Join(dir, "ssh", "gitea.ed25519"),
	}
}

// StartGitea starts a fresh Gitea whose state lives in dir and returns once
// its API answers and the administrator's token works. Gitea needs git on
// PATH for every repository operation.
func StartGitea(dir string) (*Gitea, error) {
	binary, err := BinaryPath("gitea", GiteaVersion)
	if err != nil {
		return nil, err
	}
	if _, err := LookSystemBinary("git", "git"); err != nil {
		return nil, err
	}
	paths := newGiteaPaths(binary, dir)
	hostKey, err := writeSSHHostKey(paths.hostKey)
	if err != nil {
		return nil, err
	}
	g := &Gitea{dir: dir, sshHostKey: hostKey}
	if err := g.choosePortsAndWriteConfig(paths); err != nil {
		return nil, err
	}
	if err := g.prepareDatabase(paths); err != nil {
		return nil, err
	}
	if err := g.startWeb(paths); err != nil {
		return nil, err
	}
	client, err := g.NewClient(g.token)
	if err != nil {
		g.Stop()
		return nil, err
	}
	g.adminClient = client
	return g, nil
}

// prepareDatabase creates the schema and the administrator with a token.
// It runs before the web server so the server never serves a half-set-up
// instance.
func (g *Gitea) prepareDatabase(paths giteaPaths) error {
	if _, err := runGitea(paths, "migrate"); err != nil {
		return err
	}
	if _, err := runGitea(paths, "admin", "user", "create", "--admin",
		"--username", giteaAdminUser, "--password", giteaAdminPassword,
		"--email", giteaAdminEmail, "--must-change-password=false"); err != nil {
		return err
	}
	token, err := runGitea(paths, "admin", "user", "generate-access-token",
		"--username", giteaAdminUser, "--token-name", "harness", "--scopes", "all", "--raw")
	if err != nil {
		return err
	}
	g.token = strings.TrimSpace(token)
	if g.token == "" {
		return errors.New("gitea generate-access-token printed no token")
	}
	return nil
}

// startWeb runs "gitea web" and waits for the API. A port lost to another
// process between FreePort and Gitea's bind is retried on new ports.
func (g *Gitea) startWeb(paths giteaPaths) error {
	for attempt := 1; ; attempt++ {
		process, err := StartProcess("gitea", g.dir, paths.binary, giteaGlobalArgs(paths, "web"), nil)
		if err != nil {
			return err
		}
		if err = g.waitForWeb(process); err == nil {
			g.process = process
			return nil
		}
		process.Stop(giteaStopGrace)
		portTaken := strings.Contains(process.Tail(), giteaPortTakenLog)
		if !portTaken || attempt == giteaStartAttempts {
			return fmt.Errorf("starting gitea web: %w", err)
		}
		if err := g.choosePortsAndWriteConfig(paths); err != nil {
			return err
		}
	}
}

// waitForWeb waits for the API and then the SSH port. Gitea starts its SSH
// listener in the background and exits if it cannot bind, so the process
// must still be alive once both answer.
func (g *Gitea) waitForWeb(process *Process) error {
	ctx, cancel := context.WithTimeout(context.Background(), giteaReadyTimeout)
	defer cancel()
	go cancelOnPortTaken(ctx, cancel, process)
	probe := &http.Client{Timeout: 2 * time.Second}
	if err := process.WaitHTTP(ctx, probe, g.URL()+"/api/v1/version", giteaReadyTimeout); err != nil {
		return err
	}
	if err := process.WaitTCP(loopbackAddr(g.sshPort), giteaReadyTimeout); err != nil {
		return err
	}
	if process.Exited() {
		return fmt.Errorf("gitea exited right after starting\n%s", process.Tail())
	}
	return nil
}

// cancelOnPortTaken cancels the wait for readiness as soon as Gitea logs a
// failed bind: without its HTTP listener Gitea keeps running and never
// answers, so the wait would only run into its timeout.
func cancelOnPortTaken(ctx context.Context, cancel context.CancelFunc, process *Process) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		if strings.Contains(process.Tail(), giteaPortTakenLog) {
			cancel()
			return
		}
	}
}

func (g *Gitea) choosePortsAndWriteConfig(paths giteaPaths) error {
	var err error
	if g.httpPort, err = FreePort(); err != nil {
		return err
	}
	if g.sshPort, err = FreePort(); err != nil {
		return err
	}
	return writeGiteaConfig(paths, g.httpPort, g.sshPort)
}

// giteaGlobalArgs puts the work path and config in front of a subcommand, so
// Gitea never falls back to paths beside its binary or in $HOME.
func giteaGlobalArgs(paths giteaPaths, subcommand ...string) []string {
	return append([]string{"--work-path", paths.workDir, "--config", paths.config}, subcommand...)
}

// runGitea runs a one-shot Gitea command and returns its standard output.
func runGitea(paths giteaPaths, subcommand ...string) (string, error) {
	cmd := exec.Command(paths.binary, giteaGlobalArgs(paths, subcommand...)...)
	cmd.Dir = paths.workDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("gitea %s: %w\n%s%s", strings.Join(subcommand[:min(3, len(subcommand))], " "),
			err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// writeSSHHostKey writes an ed25519 host key for the built-in SSH server.
// Left to itself Gitea generates an RSA key at first start, which costs
// time, and tests could not know the key to verify the server with.
func writeSSHHostKey(path string) (ssh.PublicKey, error) {
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the gitea SSH host key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(private, "gitops-reverser test harness")
	if err != nil {
		return nil, fmt.Errorf("encoding the gitea SSH host key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the gitea SSH directory: %w", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, fmt.Errorf("writing the gitea SSH host key: %w", err)
	}
	hostKey, err := ssh.NewPublicKey(public)
	if err != nil {
		return nil, fmt.Errorf("encoding the gitea SSH host public key: %w", err)
	}
	return hostKey, nil
}

// URL is the server's base URL, without a trailing slash.
func (g *Gitea) URL() string { return "http://" + loopbackAddr(g.httpPort) }

// AdminUser is the administrator's user name.
func (g *Gitea) AdminUser() string { return giteaAdminUser }

// AdminPassword is the administrator's password; users made by CreateUser
// have it too.
func (g *Gitea) AdminPassword() string { return giteaAdminPassword }

// Token is the administrator's access token, with every scope.
func (g *Gitea) Token() string { return g.token }

// SSHPort is the built-in SSH server's loopback port.
func (g *Gitea) SSHPort() int { return g.sshPort }

// SSHHostKey is the built-in SSH server's host key, for a client's
// known-hosts check (ssh.FixedHostKey).
func (g *Gitea) SSHHostKey() ssh.PublicKey { return g.sshHostKey }

// SSHURL is the ssh:// clone URL of owner/repo. The user in it is always
// "git"; the key decides which Gitea user is acting.
func (g *Gitea) SSHURL(owner, repo string) string {
	return fmt.Sprintf("ssh://%s@%s/%s/%s.git", giteaBuiltinSSHUser, loopbackAddr(g.sshPort), owner, repo)
}

// HTTPCloneURL is the smart-HTTP clone URL of owner/repo; authenticate with
// a user name and its token (or password) as basic auth.
func (g *Gitea) HTTPCloneURL(owner, repo string) string {
	return fmt.Sprintf("%s/%s/%s.git", g.URL(), owner, repo)
}

// LogPath is the server's log, for test failure messages.
func (g *Gitea) LogPath() string { return g.process.LogPath }

// Client is an API client authenticated as the administrator. It is safe
// for concurrent use.
func (g *Gitea) Client() *gitea.Client { return g.adminClient }

// NewClient returns an API client authenticated with token, for acting as
// another user (see CreateUser).
func (g *Gitea) NewClient(token string) (*gitea.Client, error) {
	client, err := gitea.NewClient(g.URL(), gitea.SetToken(token))
	if err != nil {
		return nil, fmt.Errorf("creating a gitea API client for %s: %w", g.URL(), err)
	}
	return client, nil
}

// Stop shuts the server down and waits for it to exit.
func (g *Gitea) Stop() {
	if g == nil {
		return
	}
	g.process.Stop(giteaStopGrace)
}

// CreateRepo creates a public repository owned by the administrator with
// default branch main; autoInit gives it a first commit with a README.
func (g *Gitea) CreateRepo(name string, autoInit bool) (*gitea.Repository, error) {
	repo, resp, err := g.adminClient.CreateRepo(gitea.CreateRepoOption{
		Name:          name,
		AutoInit:      autoInit,
		DefaultBranch: "main",
	})
	if err := checkGiteaResponse(resp, err, http.StatusCreated); err != nil {
		return nil, fmt.Errorf("creating gitea repository %s/%s: %w", giteaAdminUser, name, err)
	}
	return repo, nil
}

// CreateUser creates an ordinary (non-admin) user with AdminPassword and
// returns an access token of theirs with every scope, for tests that need
// a second identity.
func (g *Gitea) CreateUser(name string) (token string, err error) {
	mustChangePassword := false
	_, resp, err := g.adminClient.AdminCreateUser(gitea.CreateUserOption{
		Username:           name,
		Email:              name + "@example.com",
		Password:           giteaAdminPassword,
		MustChangePassword: &mustChangePassword,
	})
	if err := checkGiteaResponse(resp, err, http.StatusCreated); err != nil {
		return "", fmt.Errorf("creating gitea user %s: %w", name, err)
	}
	// Gitea creates tokens only for a caller authenticated by password.
	asUser, err := gitea.NewClient(g.URL(), gitea.SetBasicAuth(name, giteaAdminPassword))
	if err != nil {
		return "", fmt.Errorf("creating a gitea API client for %s: %w", name, err)
	}
	created, resp, err := asUser.CreateAccessToken(gitea.CreateAccessTokenOption{
		Name:   "harness",
		Scopes: []gitea.AccessTokenScope{gitea.AccessTokenScopeAll},
	})
	if err := checkGiteaResponse(resp, err, http.StatusCreated); err != nil {
		return "", fmt.Errorf("creating an access token for gitea user %s: %w", name, err)
	}
	return created.Token, nil
}

// checkGiteaResponse turns an SDK result into one error: the SDK returns a
// nil error for some non-2xx answers, so the status is checked as well.
func checkGiteaResponse(resp *gitea.Response, err error, want int) error {
	if err != nil {
		if resp != nil {
			return fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
		return err
	}
	if resp == nil || resp.StatusCode != want {
		got := "no response"
		if resp != nil {
			got = resp.Status
		}
		return fmt.Errorf("gitea answered %s, want %d", got, want)
	}
	return nil
}

// giteaConfigTemplate is app.ini for a disposable, offline instance. Values
// that matter for speed: SQLite in WAL mode, in-memory queues, sessions and
// indexers off disk; cron tasks and the update checker are off so nothing
// runs behind a test's back or reaches for the network. Avatars need no
// setting: OFFLINE_MODE turns Gravatar off, and 1.27 ignores [picture] keys
// for it (they moved to the admin panel).
const giteaConfigTemplate = `APP_NAME = gitops-reverser test forge
RUN_MODE = prod
WORK_PATH = {{.Dir}}
; Containers running the tests are often root; Gitea refuses that otherwise.
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
DOMAIN = 127.0.0.1
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {{.HTTPPort}}
ROOT_URL = http://127.0.0.1:{{.HTTPPort}}/
STATIC_ROOT_PATH = {{.StaticRoot}}
APP_DATA_PATH = {{.Dir}}/data
OFFLINE_MODE = true
LFS_START_SERVER = false
GRACEFUL_HAMMER_TIME = 3s
DISABLE_SSH = false
START_SSH_SERVER = true
BUILTIN_SSH_SERVER_USER = {{.SSHUser}}
SSH_DOMAIN = 127.0.0.1
SSH_PORT = {{.SSHPort}}
SSH_LISTEN_HOST = 127.0.0.1
SSH_LISTEN_PORT = {{.SSHPort}}
SSH_SERVER_HOST_KEYS = {{.HostKey}}
; Keep Gitea away from the real ~/.ssh.
SSH_ROOT_PATH = {{.Dir}}/ssh
SSH_CREATE_AUTHORIZED_KEYS_FILE = false

[database]
DB_TYPE = sqlite3
PATH = {{.Dir}}/data/gitea.db
SQLITE_JOURNAL_MODE = WAL
LOG_SQL = false

[repository]
ROOT = {{.Dir}}/repositories
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = {{.SecretKey}}
INTERNAL_TOKEN = {{.InternalToken}}
; Webhooks in tests point at listeners on this machine.
ALLOWED_HOST_LIST = loopback

[oauth2]
JWT_SECRET = {{.JWTSecret}}

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = {{.Dir}}/log

[mailer]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REGISTER_EMAIL_CONFIRM = false
ENABLE_NOTIFY_MAIL = false

[session]
PROVIDER = memory

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false
{{range .DisabledCronTasks}}
[cron.{{.}}]
ENABLED = false
{{end}}`

// giteaDefaultCronTasks are the cron tasks Gitea 1.27 enables by default.
const giteaDefaultCronTasks = `archive_cleanup update_mirrors repo_health_check
	check_repo_stats update_migration_poster_id sync_external_users
	cleanup_actions deleted_branches_cleanup cleanup_hook_task_table
	cleanup_packages update_checker stop_zombie_tasks stop_endless_tasks
	cancel_abandoned_jobs start_schedule_tasks`

func writeGiteaConfig(paths giteaPaths, httpPort, sshPort int) error {
	tmpl, err := template.New("app.ini").Parse(giteaConfigTemplate)
	if err != nil {
		return fmt.Errorf("parsing the gitea app.ini template: %w", err)
	}
	var ini bytes.Buffer
	err = tmpl.Execute(&ini, map[string]any{
		"Dir":               paths.workDir,
		"HTTPPort":          strconv.Itoa(httpPort),
		"SSHPort":           strconv.Itoa(sshPort),
		"SSHUser":           giteaBuiltinSSHUser,
		"StaticRoot":        paths.staticRoot,
		"HostKey":           paths.hostKey,
		"SecretKey":         "gitops-reverser-harness-secret-key",
		"InternalToken":     "gitops-reverser-harness-internal-token-" + strings.Repeat("0", 64),
		"JWTSecret":         fixedJWTSecret("oauth2"),
		"DisabledCronTasks": strings.Fields(giteaDefaultCronTasks),
	})
	if err != nil {
		return fmt.Errorf("rendering gitea app.ini: %w", err)
	}
	if err := os.WriteFile(paths.config, ini.Bytes(), 0o600); err != nil {
		return fmt.Errorf("writing gitea app.ini: %w", err)
	}
	return nil
}

// fixedJWTSecret derives a stable secret in the format Gitea expects
// (unpadded base64url of 32 bytes); an invalid one makes Gitea generate a
// new secret and rewrite app.ini.
func fixedJWTSecret(purpose string) string {
	sum := sha256.Sum256([]byte("gitops-reverser harness " + purpose))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// MergePullRequest merges pull request number of owner/repo (a merge
// commit) as a reviewer would, through Gitea's API. Gitea checks a new
// head's mergeability in the background and answers 405 "Please try again
// later" until it has, so the merge is asked again on a ticker until Gitea
// takes it or ctx ends; any other refusal is returned at once.
func (g *Gitea) MergePullRequest(ctx context.Context, owner, repo string, number int64) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		merged, resp, err := g.adminClient.MergePullRequest(owner, repo, number,
			gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge})
		if err == nil && merged {
			return nil
		}
		if resp == nil || resp.StatusCode != http.StatusMethodNotAllowed {
			if err == nil {
				err = errors.New("not merged")
			}
			return fmt.Errorf("merging pull request #%d of %s/%s: %w", number, owner, repo, checkGiteaResponse(resp, err, http.StatusOK))
		}
		// 405 also answers a merge of one already merged (an earlier
		// answer lost).
		if pr, _, err := g.adminClient.GetPullRequest(owner, repo, number); err == nil && pr.HasMerged {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("merging pull request #%d of %s/%s: Gitea never found it mergeable: %w", number, owner, repo, ctx.Err())
		case <-ticker.C:
		}
	}
}
