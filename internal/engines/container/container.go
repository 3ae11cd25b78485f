// Package container runs an engine image with testcontainers-go. It is the path for machines with
// a Docker engine; the engines package selects it only when Available says one answers.
package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	tc "github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// ErrNoDocker means no Docker engine answered.
var ErrNoDocker = errors.New("no Docker engine answers")

// Available returns nil when a Docker engine answers, else an error wrapping ErrNoDocker.
func Available(ctx context.Context) (err error) {
	if os.Getenv("DOCKER_HOST") == "" {
		if _, serr := os.Stat("/var/run/docker.sock"); serr != nil {
			return fmt.Errorf("%w: DOCKER_HOST is unset and /var/run/docker.sock is missing", ErrNoDocker)
		}
	}
	defer func() { // testcontainers may panic when it finds no runtime
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrNoDocker, r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := tc.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	if err := p.Health(ctx); err != nil { // Health closes the provider
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	return nil
}

// Spec describes one engine container.
type Spec struct {
	Image   string            // e.g. "valkey/valkey:8.1"
	Port    string            // container port, e.g. "6379/tcp"
	Cmd     []string          // command and arguments
	Env     map[string]string // environment
	WaitLog string            // log line to wait for ("" waits for the port only)
	// WaitLogCount is how many times WaitLog must appear (PostgreSQL's image prints its ready line
	// once for the init server and once for the real one).
	WaitLogCount int
}

// Service is a running container reachable at Host:Port from here.
type Service struct {
	Host string
	Port int
	c    tc.Container
}

// Run starts the container and waits until it is ready.
func Run(ctx context.Context, s Spec) (*Service, error) {
	var strategy wait.Strategy = wait.ForListeningPort(s.Port)
	if s.WaitLog != "" {
		n := max(s.WaitLogCount, 1)
		strategy = wait.ForAll(wait.ForListeningPort(s.Port), wait.ForLog(s.WaitLog).WithOccurrence(n))
	}
	c, err := tc.GenericContainer(ctx, tc.GenericContainerRequest{
		ContainerRequest: tc.ContainerRequest{
			Image:        s.Image,
			ExposedPorts: []string{s.Port},
			Cmd:          s.Cmd,
			Env:          s.Env,
			WaitingFor:   strategy,
		},
		Started: true,
	})
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.Background())
		}
		return nil, fmt.Errorf("container %s: %w", s.Image, err)
	}
	host, err := c.Host(ctx)
	if err == nil {
		var p interface{ Port() string }
		if p, err = c.MappedPort(ctx, s.Port); err == nil {
			var port int
			if port, err = strconv.Atoi(p.Port()); err == nil {
				return &Service{Host: host, Port: port, c: c}, nil
			}
		}
	}
	_ = c.Terminate(context.Background())
	return nil, fmt.Errorf("container %s: mapped address: %w", s.Image, err)
}

// Terminate stops and removes the container.
func (s *Service) Terminate(ctx context.Context) error {
	return s.c.Terminate(ctx)
}
