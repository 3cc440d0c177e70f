package hooks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"

	"github.com/gyrehq/gyre/server/hooks/hookspb"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// grpcSender calls NotifyChannelState of Centrifugo's proxy service for
// channel events and NotifyUserStatus of Gyre's UserStatus service for
// user events.
type grpcSender struct {
	timeout  time.Duration
	channels proxypb.CentrifugoProxyClient
	users    hookspb.UserStatusClient
	md       metadata.MD
	opts     []grpc.CallOption
}

func newGRPCSender(cfg SenderConfig) *grpcSender {
	s := &grpcSender{
		timeout:  cfg.Timeout,
		channels: proxypb.NewCentrifugoProxyClient(cfg.GRPCConn),
		users:    hookspb.NewUserStatusClient(cfg.GRPCConn),
	}
	if len(cfg.Headers) > 0 {
		s.md = make(metadata.MD, len(cfg.Headers))
		for k, v := range cfg.Headers {
			s.md.Set(strings.ToLower(k), v)
		}
	}
	if cfg.GRPCCompression {
		s.opts = append(s.opts, grpc.UseCompressor(gzip.Name))
	}
	return s
}

func (s *grpcSender) Send(ctx context.Context, events []Event) error {
	kind, err := batchKind(events)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if s.md != nil {
		ctx = metadata.NewOutgoingContext(ctx, s.md)
	}
	if kind == KindChannel {
		resp, err := s.channels.NotifyChannelState(ctx, channelRequest(events), s.opts...)
		if err != nil {
			return fmt.Errorf("hooks: NotifyChannelState with %d events: %w", len(events), err)
		}
		if e := resp.GetError(); e != nil {
			return fmt.Errorf("hooks: NotifyChannelState: %w", &refusedError{code: e.Code, message: e.Message, temporary: e.Temporary})
		}
		return nil
	}
	resp, err := s.users.NotifyUserStatus(ctx, userRequest(events), s.opts...)
	if err != nil {
		return fmt.Errorf("hooks: NotifyUserStatus with %d events: %w", len(events), err)
	}
	if e := resp.GetError(); e != nil {
		return fmt.Errorf("hooks: NotifyUserStatus: %w", &refusedError{code: e.Code, message: e.Message, temporary: e.Temporary})
	}
	return nil
}
