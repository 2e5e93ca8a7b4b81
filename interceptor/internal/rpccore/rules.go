package rpccore

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/locktag/locktag/interceptor/locktagv1"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The adapters' construction errors: the guard's, which each adapter
// re-exports, so errors.Is matches across adapters.
var (
	ErrUnknownMethod = guard.ErrUnknownMethod
	ErrBadField      = guard.ErrBadField
	ErrReqInStream   = guard.ErrReqInStream
	ErrBadSource     = guard.ErrBadSource
)

// RuleError is guard.RuleError, which the adapters' New return.
type RuleError = guard.RuleError

// ruleSource is a rule's parsed tag and where it came from.
type ruleSource struct {
	spec   *keyexpr.Spec
	tag    string // as given, for a *RuleError
	err    error  // from parsing or building the spec
	origin string
}

const originRules = "Rules"

// Compile builds the lock guards of an interceptor: proto options first,
// then Go rules over them. Errors are sorted by method and joined.
func Compile[R, EH any](l *locker.Locker, rules map[string]string, s *Settings[R, EH], sources func(m Method) keyexpr.Sources[R], opts []guard.Option) (unary, stream map[string]*guard.Lock[R], err error) {
	var errs []error
	tags := map[string]ruleSource{}
	if s.ProtoOptions {
		for method, rs := range protoRules(s.Files) {
			tags[method] = rs
		}
	}
	for method, tag := range rules {
		if tag == "" {
			delete(tags, method)
			if _, err := FindMethod(s.Files, method); err != nil {
				errs = append(errs, &RuleError{Method: method, Origin: originRules, Err: err})
			}
			continue
		}
		spec, err := keyexpr.ParseTag(tag)
		tags[method] = ruleSource{spec: spec, tag: tag, err: err, origin: originRules}
	}
	for _, method := range s.FailOpen {
		if _, ok := tags[method]; !ok {
			errs = append(errs, fmt.Errorf("%w: WithFailOpenFor(%q): the method has no lock rule", locker.ErrBadOption, method))
		}
	}
	unary, stream = map[string]*guard.Lock[R]{}, map[string]*guard.Lock[R]{}
	for _, method := range slices.Sorted(maps.Keys(tags)) {
		rs := tags[method]
		ropts := opts
		if slices.Contains(s.FailOpen, method) {
			ropts = append(slices.Clip(opts), guard.WithFailOpen())
		}
		g, streaming, err := compileRule(l, method, rs, s.Files, sources, ropts)
		if err != nil {
			errs = append(errs, &RuleError{Method: method, Origin: rs.origin, Tag: rs.tag, Err: err})
			continue
		}
		if streaming {
			stream[method] = g
		} else {
			unary[method] = g
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return unary, stream, nil
}

// compileRule binds one rule's spec for method.
func compileRule[R any](l *locker.Locker, method string, rs ruleSource, files *protoregistry.Files, sources func(Method) keyexpr.Sources[R], opts []guard.Option) (*guard.Lock[R], bool, error) {
	md, err := FindMethod(files, method)
	if err != nil {
		return nil, false, err
	}
	if rs.err != nil {
		return nil, false, rs.err
	}
	m := Method{Full: method, Desc: md, Streaming: IsStreaming(md)}
	g, err := guard.NewLock(l, rs.spec, sources(m), opts...)
	return g, m.Streaming, err
}

// FindMethod looks a full method name up in files.
func FindMethod(files *protoregistry.Files, method string) (protoreflect.MethodDescriptor, error) {
	svc, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !strings.HasPrefix(method, "/") || !ok || svc == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%w: %q is not a full method name like \"/shop.v1.Inventory/Reserve\"", ErrUnknownMethod, method)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc + "." + name))
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not in the descriptor registry (import the service's generated package, check the name, or see WithFiles)", ErrUnknownMethod, method)
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return nil, fmt.Errorf("%w: %s names a %T, not a method", ErrUnknownMethod, method, d)
	}
	return md, nil
}

// protoRules collects the (locktag.v1.lock) options of every method in files.
func protoRules(files *protoregistry.Files) map[string]ruleSource {
	out := map[string]ruleSource{}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		svcs := fd.Services()
		for i := range svcs.Len() {
			methods := svcs.Get(i).Methods()
			for j := range methods.Len() {
				md := methods.Get(j)
				opts, ok := md.Options().(*descriptorpb.MethodOptions)
				if !ok || opts == nil || !proto.HasExtension(opts, locktagv1.E_Lock) {
					continue
				}
				lr, _ := proto.GetExtension(opts, locktagv1.E_Lock).(*locktagv1.LockRule)
				method := "/" + string(md.Parent().FullName()) + "/" + string(md.Name())
				out[method] = ruleSpec(lr, "proto option (locktag.v1.lock) in "+fd.Path())
			}
		}
		return true
	})
	return out
}

// ruleSpec builds a LockRule's spec from its fields, with the tag's
// validation and without writing and re-parsing a tag. The rule's tag, for
// messages, is the equivalent one keyexpr.NewSpec renders.
func ruleSpec(lr *locktagv1.LockRule, origin string) ruleSource {
	spec, err := keyexpr.NewSpec(keyexpr.Fields{
		Key: lr.GetKey(), Expire: lr.GetExpire(), Wait: lr.GetWait(), Name: lr.GetName(), Long: lr.GetLong(),
		Limit: lr.GetLimit(), Keep: lr.GetKeep(), Mode: lr.GetMode(), Keys: lr.GetKeys(), Rate: lr.GetRate(), Burst: lr.GetBurst(),
	})
	rs := ruleSource{spec: spec, err: err, origin: origin}
	if te, ok := errors.AsType[*keyexpr.TagError](err); ok {
		rs.tag = te.Tag
	} else if spec != nil {
		rs.tag = spec.Tag
	}
	return rs
}
