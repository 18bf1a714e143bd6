package ha

import (
	"io"
	"net"
	"sync"
	"time"
)

// balancer stands where a cluster's Service would between kube-apiserver's
// audit webhook and the replicas' audit ingresses: the API server is given
// one URL, and each connection it opens goes to the next replica in turn.
// It passes TLS through untouched (the API server's mTLS ends at the
// replica), and skips a replica that refuses the connection (stopped,
// killed, not listening yet) for the next one, as a Service skips a pod
// that is not ready.
type balancer struct {
	listener net.Listener

	mu       sync.Mutex
	backends []string // addresses, in turn order
	next     int
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
	// dials counts connections forwarded, by backend (for the test's log).
	dials map[string]int
}

// startBalancer listens on a loopback port; it forwards nothing until
// setBackends.
func startBalancer() (*balancer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &balancer{listener: l, conns: map[net.Conn]struct{}{}, dials: map[string]int{}}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr is the address the API server's audit webhook posts to.
func (b *balancer) Addr() string { return b.listener.Addr().String() }

// setBackends replaces the replicas connections go to.
func (b *balancer) setBackends(addrs []string) {
	b.mu.Lock()
	b.backends = append([]string(nil), addrs...)
	b.next = 0
	b.mu.Unlock()
}

// forwarded is how many connections went to each backend so far.
func (b *balancer) forwarded() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for k, v := range b.dials {
		out[k] = v
	}
	return out
}

func (b *balancer) accept() {
	defer b.wg.Done()
	for {
		conn, err := b.listener.Accept()
		if err != nil {
			return // closed at the end of the suite
		}
		b.wg.Add(1)
		go b.forward(conn)
	}
}

// candidates are the backends in the order this connection tries them:
// round robin, starting one further than the last connection did.
func (b *balancer) candidates() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.backends)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, b.backends[(b.next+i)%n])
	}
	if n > 0 {
		b.next = (b.next + 1) % n
	}
	return out
}

// forward dials the first candidate that accepts and copies both ways
// until either side closes. With none accepting the client's connection is
// closed: the API server sees the post fail and retries the batch.
func (b *balancer) forward(client net.Conn) {
	defer b.wg.Done()
	var server net.Conn
	for _, addr := range b.candidates() {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			server = conn
			b.mu.Lock()
			b.dials[addr]++
			b.mu.Unlock()
			break
		}
	}
	if server == nil {
		_ = client.Close()
		return
	}
	b.mu.Lock()
	b.conns[client], b.conns[server] = struct{}{}, struct{}{}
	b.mu.Unlock()
	// One side ending (a replica stopped, or the API server closed an idle
	// connection) ends the pair.
	splice(client, server, func() {
		b.mu.Lock()
		delete(b.conns, client)
		delete(b.conns, server)
		b.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
	})
}

// splice copies both ways between a and b until one direction ends (a
// close, a reset, an error), then calls closeBoth, which must close both
// so the other copy ends too, and waits for it.
func splice(a, b net.Conn, closeBoth func()) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(b, a)
	go pipe(a, b)
	<-done
	closeBoth()
	<-done
}

// close stops listening and ends every pair.
func (b *balancer) close() {
	_ = b.listener.Close()
	b.mu.Lock()
	conns := b.conns
	b.conns = map[net.Conn]struct{}{}
	b.mu.Unlock()
	for conn := range conns {
		_ = conn.Close()
	}
	b.wg.Wait()
}
