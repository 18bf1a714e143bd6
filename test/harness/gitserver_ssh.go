package harness

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshHandshakeTimeout bounds how long a connection may take to
// authenticate, so a stuck client cannot hold up Stop.
const sshHandshakeTimeout = 30 * time.Second

// GenerateSSHKeyPair makes an ed25519 client key: the private key as an
// OpenSSH-format PEM (what ssh -i and go-git's NewPublicKeys read) and the
// public key to pass to GitServerOptions.AuthorizedKeys or AuthorizeSSHKey.
func GenerateSSHKeyPair() (privateKeyPEM []byte, publicKey ssh.PublicKey, err error) {
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating an ed25519 SSH key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(private, "gitops-reverser test key")
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the SSH private key: %w", err)
	}
	publicKey, err = ssh.NewPublicKey(public)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the SSH public key: %w", err)
	}
	return pem.EncodeToMemory(block), publicKey, nil
}

// KnownHosts is the server's host key as a known_hosts line
// ("[127.0.0.1]:PORT ssh-ed25519 AAAA..."), for clients that verify it.
func (s *GitServer) KnownHosts() string {
	address := knownhosts.Normalize(s.sshListener.Addr().String())
	return knownhosts.Line([]string{address}, s.hostKey.PublicKey())
}

// HostKey is the server's SSH host public key, for ssh.FixedHostKey.
func (s *GitServer) HostKey() ssh.PublicKey { return s.hostKey.PublicKey() }

// startSSH serves git over SSH on a loopback port the kernel picks, with a
// fresh ed25519 host key and public-key authentication only.
func (s *GitServer) startSSH() error {
	_, hostPrivate, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the SSH host key: %w", err)
	}
	if s.hostKey, err = ssh.NewSignerFromKey(hostPrivate); err != nil {
		return fmt.Errorf("loading the SSH host key: %w", err)
	}
	s.sshConfig = &ssh.ServerConfig{PublicKeyCallback: s.checkPublicKey}
	s.sshConfig.AddHostKey(s.hostKey)
	if s.sshListener, err = net.Listen("tcp", loopbackAddr(0)); err != nil {
		return fmt.Errorf("listening for git over SSH: %w", err)
	}
	s.sshDone = make(chan struct{})
	go s.acceptSSH()
	return nil
}

func (s *GitServer) checkPublicKey(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	s.mu.Lock()
	authorized := s.authorizedKeys[string(key.Marshal())]
	s.mu.Unlock()
	if !authorized {
		return nil, fmt.Errorf("SSH key %s is not authorized", ssh.FingerprintSHA256(key))
	}
	return &ssh.Permissions{}, nil
}

func (s *GitServer) acceptSSH() {
	defer close(s.sshDone)
	for {
		conn, err := s.sshListener.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.logger.Printf("accepting SSH connections: %v", err)
			}
			return
		}
		s.sshHandlers.Add(1)
		go s.serveSSHConn(conn)
	}
}

// serveSSHConn authenticates one connection and serves its session
// channels until the client hangs up.
func (s *GitServer) serveSSHConn(netConn net.Conn) {
	defer s.sshHandlers.Done()
	defer netConn.Close()
	// Tracked from before the handshake, so Stop also ends a client that
	// stalls while authenticating.
	if !s.trackSSHConn(netConn, true) {
		return
	}
	defer s.trackSSHConn(netConn, false)
	_ = netConn.SetDeadline(time.Now().Add(sshHandshakeTimeout))
	conn, channels, requests, err := ssh.NewServerConn(netConn, s.sshConfig)
	if err != nil {
		s.logger.Printf("SSH handshake with %s: %v", netConn.RemoteAddr(), err)
		return
	}
	_ = netConn.SetDeadline(time.Time{})
	defer conn.Close()
	go ssh.DiscardRequests(requests)
	var sessions sync.WaitGroup
	for newChannel := range channels {
		if newChannel.ChannelType() != "session" {
			_ = newChannel.Reject(ssh.UnknownChannelType, "only session channels are served")
			continue
		}
		channel, channelRequests, err := newChannel.Accept()
		if err != nil {
			s.logger.Printf("accepting an SSH session from %s: %v", netConn.RemoteAddr(), err)
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			s.serveSSHSession(channel, channelRequests)
		}()
	}
	sessions.Wait()
}

// trackSSHConn records (open) or forgets a connection so Stop can close it;
// it reports false when Stop has already begun and the connection must go.
func (s *GitServer) trackSSHConn(conn net.Conn, open bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !open {
		delete(s.sshConns, conn)
		return true
	}
	if s.stopping {
		return false
	}
	s.sshConns[conn] = true
	return true
}

// serveSSHSession answers a session's requests: env (only GIT_PROTOCOL is
// kept, so protocol v2 works) and a single exec of a git command, whose
// exit status is sent back before the channel is closed.
func (s *GitServer) serveSSHSession(channel ssh.Channel, requests <-chan *ssh.Request) {
	defer channel.Close()
	// Ending the session kills a git process the client walked away from,
	// which would otherwise block writing to a channel nobody reads.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var env []string
	var exited chan uint32
	for {
		select {
		case req, ok := <-requests:
			if !ok {
				return
			}
			switch {
			case req.Type == "env":
				if variable, ok := parseEnvRequest(req.Payload); ok && strings.HasPrefix(variable, "GIT_PROTOCOL=") {
					env = append(env, variable)
				}
				_ = req.Reply(true, nil)
			case req.Type == "exec" && exited == nil:
				var payload struct{ Command string }
				if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
					_ = req.Reply(false, nil)
					continue
				}
				_ = req.Reply(true, nil)
				exited = make(chan uint32, 1)
				s.sshHandlers.Add(1)
				go func() {
					defer s.sshHandlers.Done()
					exited <- s.runSSHGitCommand(ctx, channel, payload.Command, env)
				}()
			default:
				_ = req.Reply(false, nil)
			}
		case status := <-exited:
			_ = channel.CloseWrite()
			_, _ = channel.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
			return
		}
	}
}

func parseEnvRequest(payload []byte) (string, bool) {
	var variable struct{ Name, Value string }
	if err := ssh.Unmarshal(payload, &variable); err != nil {
		return "", false
	}
	return variable.Name + "=" + variable.Value, true
}

// runSSHGitCommand runs the git service a client asked for with its
// stdin, stdout and stderr on the channel, and returns the exit status.
// Anything but upload-pack or receive-pack on a repository under Root is
// refused with a message on stderr, as git-shell would.
func (s *GitServer) runSSHGitCommand(ctx context.Context, channel ssh.Channel, command string, env []string) uint32 {
	service, clientPath, err := parseGitSSHCommand(command)
	if err == nil {
		clientPath, err = s.resolveRepoPath(clientPath)
	}
	if err != nil {
		fmt.Fprintf(channel.Stderr(), "fatal: %v\n", err)
		return 128
	}
	cmd := exec.CommandContext(ctx, s.gitBin, service, clientPath)
	cmd.Dir = s.homeDir
	cmd.Env = append(s.gitEnv(), env...)
	cmd.Stdout = channel
	cmd.Stderr = channel.Stderr()
	cmd.WaitDelay = 5 * time.Second
	// A pipe rather than cmd.Stdin = channel: Wait would otherwise wait for
	// the client to close its side, which it does only after the exit status.
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		s.logger.Printf("starting git %s for SSH: %v", service, err)
		fmt.Fprintf(channel.Stderr(), "fatal: cannot start git %s\n", service)
		return 128
	}
	go func() {
		_, _ = io.Copy(stdin, channel)
		_ = stdin.Close()
	}()
	if err := cmd.Wait(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && exitErr.ExitCode() > 0 {
			return uint32(exitErr.ExitCode())
		}
		s.logger.Printf("git %s %s over SSH: %v", service, clientPath, err)
		return 255
	}
	return 0
}

// parseGitSSHCommand splits the command a git client execs over SSH —
// "git-upload-pack '/repo.git'", or "git upload-pack ..." — into the git
// service ("upload-pack" or "receive-pack") and the repository path.
func parseGitSSHCommand(command string) (service, repoPath string, err error) {
	program, argument, _ := strings.Cut(strings.TrimSpace(command), " ")
	if program == "git" {
		program, argument, _ = strings.Cut(strings.TrimSpace(argument), " ")
		program = "git-" + program
	}
	switch program {
	case "git-upload-pack", "git-receive-pack":
	default:
		return "", "", fmt.Errorf("unrecognized command %q: only git-upload-pack and git-receive-pack are served", command)
	}
	repoPath, err = shellUnquoteWord(strings.TrimSpace(argument))
	if err != nil {
		return "", "", fmt.Errorf("parsing the repository path of %q: %w", command, err)
	}
	return strings.TrimPrefix(program, "git-"), repoPath, nil
}

// shellUnquoteWord undoes the POSIX shell quoting git applies to the path
// ('it'\”s' for it's) and insists on exactly one word, since no shell runs
// the command here.
func shellUnquoteWord(quoted string) (string, error) {
	var word strings.Builder
	inQuotes := false
	for i := 0; i < len(quoted); i++ {
		c := quoted[i]
		switch {
		case c == '\'':
			inQuotes = !inQuotes
		case inQuotes:
			word.WriteByte(c)
		case c == '\\' && i+1 < len(quoted):
			i++
			word.WriteByte(quoted[i])
		case c == ' ' || c == '\t' || c == '\n':
			return "", errors.New("expected a single argument")
		default:
			word.WriteByte(c)
		}
	}
	if inQuotes {
		return "", errors.New("unterminated quote")
	}
	if word.Len() == 0 {
		return "", errors.New("missing repository path")
	}
	return word.String(), nil
}
