package gate

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"sync"
)

// corruptor is a loopback proxy to the server that, when armed, replaces the first byte of the
// next server-to-client chunk with '!', a type byte RESP2 does not have.
type corruptor struct {
	ln     net.Listener
	target string
	armed  chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func newCorruptor(target string) (*corruptor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	px := &corruptor{ln: ln, target: target, armed: make(chan struct{}, 1)}
	px.wg.Add(1)
	go px.accept()
	return px, nil
}

func (px *corruptor) addr() string { return px.ln.Addr().String() }

func (px *corruptor) arm() { px.armed <- struct{}{} }

func (px *corruptor) track(c net.Conn) {
	px.mu.Lock()
	px.conns = append(px.conns, c)
	px.mu.Unlock()
}

func (px *corruptor) accept() {
	defer px.wg.Done()
	for {
		client, err := px.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", px.target)
		if err != nil {
			client.Close()
			continue
		}
		px.track(client)
		px.track(server)
		px.wg.Add(2)
		go func() {
			defer px.wg.Done()
			io.Copy(server, client)
			server.Close()
		}()
		go func() {
			defer px.wg.Done()
			defer client.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 {
					select {
					case <-px.armed:
						buf[0] = '!'
					default:
					}
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func (px *corruptor) close() {
	px.ln.Close()
	px.mu.Lock()
	for _, c := range px.conns {
		c.Close()
	}
	px.mu.Unlock()
	px.wg.Wait()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

func (l *lockedBuffer) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
