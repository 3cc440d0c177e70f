package grpcapi

import (
	"context"
	"time"

	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// service implements apipb.CentrifugoApiServer on an api.Executor: each
// method converts the request, runs the executor's method and converts
// the result or error back.
type service struct {
	apipb.UnimplementedCentrifugoApiServer
	exec *api.Executor
	cfg  Config
}

// finish ends the call of method begun at start: it tells OnCall and maps
// err. It returns the error for the response's error field (nil on
// success) and, in the transport error mode, the status to answer with
// instead of a response.
func (s *service) finish(ctx context.Context, method string, start time.Time, err error) (*apipb.Error, error) {
	var code uint32
	var pe *apipb.Error
	if err != nil {
		ae := s.exec.APIError(method, err)
		code = ae.Code
		pe = &apipb.Error{Code: ae.Code, Message: ae.Message}
	}
	if s.cfg.OnCall != nil {
		s.cfg.OnCall(method, code, time.Since(start))
	}
	if pe != nil && s.transportMode(ctx) {
		st, derr := status.New(statusCode(pe.Code), pe.Message).WithDetails(pe)
		if derr != nil {
			return pe, status.Error(statusCode(pe.Code), pe.Message)
		}
		return pe, st.Err()
	}
	return pe, nil
}

// answer is the response of a failed call: resp, or the transport
// mode's status.
func answer[Resp any](resp *Resp, terr error) (*Resp, error) {
	if terr != nil {
		return nil, terr
	}
	return resp, nil
}

func (s *service) Publish(ctx context.Context, req *apipb.PublishRequest) (*apipb.PublishResponse, error) {
	start := time.Now()
	var res api.PublishResult
	var err error
	if refused := checkPublish(req); refused != nil {
		err = refused
	} else {
		res, err = s.exec.Publish(ctx, publishRequest(req))
	}
	if pe, terr := s.finish(ctx, "publish", start, err); pe != nil {
		return answer(&apipb.PublishResponse{Error: pe}, terr)
	}
	return &apipb.PublishResponse{Result: publishResult(res)}, nil
}

func (s *service) Broadcast(ctx context.Context, req *apipb.BroadcastRequest) (*apipb.BroadcastResponse, error) {
	start := time.Now()
	var res api.BroadcastResult
	var err error
	if refused := checkBroadcast(req); refused != nil {
		err = refused
	} else {
		res, err = s.exec.Broadcast(ctx, broadcastRequest(req))
	}
	if pe, terr := s.finish(ctx, "broadcast", start, err); pe != nil {
		return answer(&apipb.BroadcastResponse{Error: pe}, terr)
	}
	return &apipb.BroadcastResponse{Result: broadcastResult(res)}, nil
}

func (s *service) Subscribe(ctx context.Context, req *apipb.SubscribeRequest) (*apipb.SubscribeResponse, error) {
	start := time.Now()
	var err error
	if refused := checkSubscribe(req); refused != nil {
		err = refused
	} else {
		_, err = s.exec.Subscribe(ctx, subscribeRequest(req))
	}
	if pe, terr := s.finish(ctx, "subscribe", start, err); pe != nil {
		return answer(&apipb.SubscribeResponse{Error: pe}, terr)
	}
	return &apipb.SubscribeResponse{Result: &apipb.SubscribeResult{}}, nil
}

func (s *service) Unsubscribe(ctx context.Context, req *apipb.UnsubscribeRequest) (*apipb.UnsubscribeResponse, error) {
	start := time.Now()
	_, err := s.exec.Unsubscribe(ctx, unsubscribeRequest(req))
	if pe, terr := s.finish(ctx, "unsubscribe", start, err); pe != nil {
		return answer(&apipb.UnsubscribeResponse{Error: pe}, terr)
	}
	return &apipb.UnsubscribeResponse{Result: &apipb.UnsubscribeResult{}}, nil
}

func (s *service) Disconnect(ctx context.Context, req *apipb.DisconnectRequest) (*apipb.DisconnectResponse, error) {
	start := time.Now()
	_, err := s.exec.Disconnect(ctx, disconnectRequest(req))
	if pe, terr := s.finish(ctx, "disconnect", start, err); pe != nil {
		return answer(&apipb.DisconnectResponse{Error: pe}, terr)
	}
	return &apipb.DisconnectResponse{Result: &apipb.DisconnectResult{}}, nil
}

func (s *service) Refresh(ctx context.Context, req *apipb.RefreshRequest) (*apipb.RefreshResponse, error) {
	start := time.Now()
	var err error
	if refused := checkRefresh(req); refused != nil {
		err = refused
	} else {
		_, err = s.exec.Refresh(ctx, refreshRequest(req))
	}
	if pe, terr := s.finish(ctx, "refresh", start, err); pe != nil {
		return answer(&apipb.RefreshResponse{Error: pe}, terr)
	}
	return &apipb.RefreshResponse{Result: &apipb.RefreshResult{}}, nil
}

func (s *service) Presence(ctx context.Context, req *apipb.PresenceRequest) (*apipb.PresenceResponse, error) {
	start := time.Now()
	res, err := s.exec.Presence(ctx, &api.ChannelRequest{Channel: req.GetChannel()})
	if pe, terr := s.finish(ctx, "presence", start, err); pe != nil {
		return answer(&apipb.PresenceResponse{Error: pe}, terr)
	}
	return &apipb.PresenceResponse{Result: presenceResult(res)}, nil
}

func (s *service) PresenceStats(ctx context.Context, req *apipb.PresenceStatsRequest) (*apipb.PresenceStatsResponse, error) {
	start := time.Now()
	res, err := s.exec.PresenceStats(ctx, &api.ChannelRequest{Channel: req.GetChannel()})
	if pe, terr := s.finish(ctx, "presence_stats", start, err); pe != nil {
		return answer(&apipb.PresenceStatsResponse{Error: pe}, terr)
	}
	return &apipb.PresenceStatsResponse{Result: presenceStatsResult(res)}, nil
}

func (s *service) History(ctx context.Context, req *apipb.HistoryRequest) (*apipb.HistoryResponse, error) {
	start := time.Now()
	res, err := s.exec.History(ctx, historyRequest(req))
	if pe, terr := s.finish(ctx, "history", start, err); pe != nil {
		return answer(&apipb.HistoryResponse{Error: pe}, terr)
	}
	return &apipb.HistoryResponse{Result: historyResult(res)}, nil
}

func (s *service) HistoryRemove(ctx context.Context, req *apipb.HistoryRemoveRequest) (*apipb.HistoryRemoveResponse, error) {
	start := time.Now()
	_, err := s.exec.HistoryRemove(ctx, &api.ChannelRequest{Channel: req.GetChannel()})
	if pe, terr := s.finish(ctx, "history_remove", start, err); pe != nil {
		return answer(&apipb.HistoryRemoveResponse{Error: pe}, terr)
	}
	return &apipb.HistoryRemoveResponse{Result: &apipb.HistoryRemoveResult{}}, nil
}

func (s *service) Channels(ctx context.Context, req *apipb.ChannelsRequest) (*apipb.ChannelsResponse, error) {
	start := time.Now()
	res, err := s.exec.Channels(ctx, &api.ChannelsRequest{Pattern: req.GetPattern()})
	if pe, terr := s.finish(ctx, "channels", start, err); pe != nil {
		return answer(&apipb.ChannelsResponse{Error: pe}, terr)
	}
	return &apipb.ChannelsResponse{Result: channelsResult(res)}, nil
}

func (s *service) Info(ctx context.Context, _ *apipb.InfoRequest) (*apipb.InfoResponse, error) {
	start := time.Now()
	res, err := s.exec.Info(ctx, &api.InfoRequest{})
	if pe, terr := s.finish(ctx, "info", start, err); pe != nil {
		return answer(&apipb.InfoResponse{Error: pe}, terr)
	}
	return &apipb.InfoResponse{Result: infoResult(res)}, nil
}

func (s *service) RPC(ctx context.Context, req *apipb.RPCRequest) (*apipb.RPCResponse, error) {
	start := time.Now()
	var res api.RPCResult
	var err error
	if refused := checkRPC(req); refused != nil {
		err = refused
	} else {
		res, err = s.exec.RPC(ctx, &api.RPCRequest{Method: req.GetMethod(), Params: req.GetParams()})
	}
	if pe, terr := s.finish(ctx, "rpc", start, err); pe != nil {
		return answer(&apipb.RPCResponse{Error: pe}, terr)
	}
	return &apipb.RPCResponse{Result: &apipb.RPCResult{Data: res.Data}}, nil
}

// Batch runs the commands on the executor's batch: a sequential batch
// publishes each stretch of publish and broadcast commands in one
// PublishMany. Its errors are per command, in the replies (a batch over
// the size limit gets gRPC's InvalidArgument, having no place for one).
func (s *service) Batch(ctx context.Context, req *apipb.BatchRequest) (*apipb.BatchResponse, error) {
	start := time.Now()
	cmds := req.GetCommands()
	in := &api.BatchRequest{Commands: make([]api.Command, len(cmds)), Parallel: req.GetParallel()}
	for i, c := range cmds {
		in.Commands[i] = command(c)
	}
	res, err := s.exec.Batch(ctx, in)
	if pe, _ := s.finish(ctx, "batch", start, err); pe != nil {
		return nil, status.Error(statusCode(pe.Code), pe.Message)
	}
	out := &apipb.BatchResponse{Replies: make([]*apipb.Reply, len(res.Replies))}
	for i, r := range res.Replies {
		out.Replies[i] = reply(r)
	}
	return out, nil
}
