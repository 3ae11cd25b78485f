package bus

import (
	"context"
	"fmt"

	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/fence"
	"github.com/echomq/kit/reference/resp"
)

// link is how the bus reaches its deployment: one connection to a standalone server, or a
// router over a cluster's primaries. Every call names a key, so a router can send it to the
// owner of that key's slot; by the co-location law all the keys of one call share it.
type link interface {
	EvalSha(ctx context.Context, s *connector.Script, keys []string, args ...any) (resp.Value, error)
	// Do runs one command; key is one of its keys (it routes the command).
	Do(ctx context.Context, key string, args ...any) (resp.Value, error)
	// Exec runs a batch whose commands all have their keys in key's slot.
	Exec(ctx context.Context, key string, b *connector.Batch, dst []resp.Value) ([]resp.Value, error)
	// DialOwner opens a fenced connection of its own to the server holding key (a parking line).
	DialOwner(ctx context.Context, key string) (*connector.Conn, error)
	// Follow takes note of a redirect a parking line was answered with.
	Follow(ctx context.Context, err error)
	Server() connector.ServerInfo
	Reconnect(ctx context.Context) error
	Reconnects() int64
	Close() error
}

// standalone is the link to one server: the main connection, and the address to dial for more.
type standalone struct {
	*connector.Conn
	addr string
	opts func() connector.Options // a parking line's, fresh for each: no Tap, no redial
}

func (s standalone) Do(ctx context.Context, _ string, args ...any) (resp.Value, error) {
	return s.Conn.Do(ctx, args...)
}

func (s standalone) Exec(ctx context.Context, _ string, b *connector.Batch, dst []resp.Value) ([]resp.Value, error) {
	return s.Conn.Exec(ctx, b, dst)
}

func (s standalone) DialOwner(ctx context.Context, _ string) (*connector.Conn, error) {
	c, err := connector.Dial(ctx, s.addr, s.opts())
	if err != nil {
		return nil, fmt.Errorf("bus: dial %s: %w", s.addr, fence.Classify(err))
	}
	return c, nil
}

func (standalone) Follow(context.Context, error) {}

// The router is a link as it is.
var _ link = (*cluster.Router)(nil)
