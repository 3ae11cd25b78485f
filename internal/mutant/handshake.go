package mutant

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/fence"
	"github.com/echomq/kit/reference/keys"
)

// Defective handshakes, for the bus's Handshake seam: each runs the canon's pieces (fence.Check,
// fence.Run, fence.OnConnect) around one mistake.

// nameOnly checks the server's name but skips its version (skipVersion) or its mode
// (skipMode), then runs the bundle fence.
func nameOnly(skipVersion, skipMode bool) func(*lua.Bundle, fence.Options) func(context.Context, *connector.Conn) error {
	return func(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
		return func(ctx context.Context, c *connector.Conn) error {
			info := c.Server()
			if skipVersion && info.Server == "valkey" {
				info.Version = fence.MinVersion
			}
			if skipMode {
				info.Mode = "standalone"
			}
			if err := fence.Check(info, opt); err != nil {
				return err
			}
			_, err := fence.Run(ctx, c, canon)
			return err
		}
	}
}

// versionBy admits a Valkey by a plausible wrong reading of its version (admit) instead of the
// canon's component-by-component comparison, then checks the rest and runs the fence.
func versionBy(admit func(version string) bool) func(*lua.Bundle, fence.Options) func(context.Context, *connector.Conn) error {
	return func(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
		return func(ctx context.Context, c *connector.Conn) error {
			info := c.Server()
			if info.Server == "valkey" {
				if !admit(info.Version) {
					return &emqerr.Error{Type: emqerr.TypeServer, Message: fmt.Sprintf("valkey %s: want >= %s", info.Version, fence.MinVersion)}
				}
				info.Version = fence.MinVersion
			}
			if err := fence.Check(info, opt); err != nil {
				return err
			}
			_, err := fence.Run(ctx, c, canon)
			return err
		}
	}
}

// versionAsText compares versions as strings ("10.0.0" sorts before "8.1.0").
func versionAsText(v string) bool { return v >= fence.MinVersion }

// versionMajorEight wants major 8 and minor 1 or more (a Valkey 9 is refused).
func versionMajorEight(v string) bool {
	major, minor, _ := strings.Cut(v, ".")
	m, _, _ := strings.Cut(minor, ".")
	n, _ := strconv.Atoi(m)
	return major == "8" && n >= 1
}

// versionMajorOnly reads the major alone (a Valkey 8.0 passes).
func versionMajorOnly(v string) bool {
	major, _, _ := strings.Cut(v, ".")
	n, _ := strconv.Atoi(major)
	return n >= 8
}

// versionWarns logs the fence's EMQVERSION and goes on against another bundle's deployment.
func versionWarns(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
	full := fence.OnConnect(canon, opt)
	return func(ctx context.Context, c *connector.Conn) error {
		err := full(ctx, c)
		if errors.Is(err, emqerr.Version) {
			if opt.Logf != nil {
				opt.Logf("fence: going on despite %v", err)
			}
			return nil
		}
		return err
	}
}

// refusalReadsOn reads the deployed bundle record after the fence's EMQVERSION, to word its
// error: a refused port that sends more than HELLO and the fence.
func refusalReadsOn(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
	full := fence.OnConnect(canon, opt)
	return func(ctx context.Context, c *connector.Conn) error {
		err := full(ctx, c)
		if errors.Is(err, emqerr.Version) {
			if v, rerr := c.Do(ctx, "HGETALL", keys.Bundle()); rerr == nil {
				return fmt.Errorf("%w (deployed: %s)", err, v.Text())
			}
		}
		return err
	}
}

// fenceBeforeCheck runs the bundle fence first and checks the server after it: a wrong server
// is still refused EMQSERVER, but the fence script has run on it by then.
func fenceBeforeCheck(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
	return func(ctx context.Context, c *connector.Conn) error {
		_, ferr := fence.Run(ctx, c, canon)
		if err := fence.Check(c.Server(), opt); err != nil {
			return err
		}
		return ferr
	}
}
