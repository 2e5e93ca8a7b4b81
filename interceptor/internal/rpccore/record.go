package rpccore

import (
	"errors"
	"fmt"

	"github.com/locktag/locktag/locker/guard"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// RecordFormat names the RPC adapters' stored outcomes: the payload is the
// marshalled response for OK, else the marshalled google.rpc.Status. gRPC
// and connect share it, so one's record replays through the other.
const RecordFormat = "G1"

// ResponseTypes finds the response type of each unary method, for replay.
// Errors wrap ErrUnknownMethod.
func ResponseTypes(files *protoregistry.Files, types *protoregistry.Types, methods []string) (map[string]protoreflect.MessageType, error) {
	out := make(map[string]protoreflect.MessageType, len(methods))
	var errs []error
	for _, m := range methods {
		md, err := FindMethod(files, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if IsStreaming(md) {
			errs = append(errs, fmt.Errorf("%w: %s is a streaming method; only unary methods can be idempotent", ErrUnknownMethod, m))
			continue
		}
		mt, err := types.FindMessageByName(md.Output().FullName())
		if err != nil {
			mt = dynamicpb.NewMessageType(md.Output())
		}
		out[m] = mt
	}
	return out, errors.Join(errs...)
}

// Answer captures a handler's outcome for the guard: a response, or, when
// st is not nil, a failed call with that status.
func Answer(resp proto.Message, st *spb.Status) guard.Answer {
	if st != nil {
		b, err := proto.Marshal(st)
		return guard.Answer{Status: int(st.GetCode()), Payload: b, ServerError: serverError(Code(st.GetCode())), Failed: true, None: err != nil}
	}
	if resp == nil || !resp.ProtoReflect().IsValid() {
		return guard.Answer{None: true} // the call fails; nothing to store
	}
	b, err := proto.Marshal(resp)
	return guard.Answer{Status: int(OK), Payload: b, Sent: true, None: err != nil}
}

// Decode reads a stored outcome: the response (of type mt) or the status.
func Decode(mt protoreflect.MessageType, r *guard.Record) (proto.Message, *spb.Status, error) {
	if Code(r.Status) != OK {
		st := &spb.Status{}
		if err := proto.Unmarshal(r.Payload, st); err != nil {
			return nil, nil, errors.New("idempotency: unreadable stored status")
		}
		return nil, st, nil
	}
	resp := mt.New().Interface()
	if err := proto.Unmarshal(r.Payload, resp); err != nil {
		return nil, nil, errors.New("idempotency: unreadable stored response")
	}
	return resp, nil, nil
}

// serverError reports the codes guard.WithServerErrorPolicy is about.
func serverError(c Code) bool {
	switch c {
	case 2, Internal, Unavailable, 15, DeadlineExceeded, 12: // Unknown, DataLoss, Unimplemented
		return true
	}
	return false
}
