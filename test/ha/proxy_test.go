package ha

import (
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// redisProxy stands between one replica and redis-server, so a test can
// cut that replica off from Redis (as a network partition would) while the
// others, and the test's own client, still reach it.
type redisProxy struct {
	listener net.Listener
	target   string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{} // both ends of every open pair
	wg    sync.WaitGroup
}

// startRedisProxy listens on a loopback port and forwards to target until
// the test ends.
func startRedisProxy(t testing.TB, target string) *redisProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &redisProxy{listener: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is what the replica is given as --redis-addr.
func (p *redisProxy) Addr() string { return p.listener.Addr().String() }

// accept forwards each connection while the proxy is not cut; while cut it
// closes a new connection at once, so the client sees its dial fail.
func (p *redisProxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return // closed at the end of the test
		}
		p.mu.Lock()
		cut := p.cut
		if !cut {
			p.conns[conn] = struct{}{}
		}
		p.mu.Unlock()
		if cut {
			_ = conn.Close()
			continue
		}
		p.wg.Add(1)
		go p.forward(conn)
	}
}

// forward dials redis-server and copies both ways until either side or the
// cut closes the pair.
func (p *redisProxy) forward(client net.Conn) {
	defer p.wg.Done()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.drop(client)
		return
	}
	p.mu.Lock()
	if p.cut {
		// Cut between accept and dial: the pair never forwards a byte.
		p.mu.Unlock()
		_ = server.Close()
		p.drop(client)
		return
	}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	// An error (a reset peer, a cut) ends the pair like a close does.
	splice(client, server, func() {
		p.drop(client)
		p.drop(server)
	})
}

func (p *redisProxy) drop(conn net.Conn) {
	p.mu.Lock()
	delete(p.conns, conn)
	p.mu.Unlock()
	_ = conn.Close()
}

// Cut closes every open connection and refuses new ones until Restore.
func (p *redisProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for conn := range conns {
		_ = conn.Close()
	}
}

// Restore forwards new connections again.
func (p *redisProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// IsCut reports whether the proxy refuses its replica now.
func (p *redisProxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// close stops listening and ends every pair.
func (p *redisProxy) close() {
	_ = p.listener.Close()
	p.Cut()
	p.wg.Wait()
}
