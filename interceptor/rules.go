package interceptor

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/locktag/locktag/interceptor/locktagv1"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Rules maps full method names, "/shop.v1.Inventory/Reserve", to lock tags
// such as `key:"sku:{req.sku}" expire:"10s" wait:"1s"` (see docs/tags.md).
// A rule here replaces the method's proto option, if it has one; an empty
// tag removes the proto option's rule, so the method takes no lock.
type Rules map[string]string

// Errors the constructors return (inside a *RuleError when they concern one
// rule). Tag and template mistakes wrap the keyexpr package's errors instead
// (keyexpr.ErrSyntax, keyexpr.ErrUnknownSource, ...).
var (
	// ErrUnknownMethod: a rule names a method that is not well-formed
	// ("/package.Service/Method") or not in the descriptor registry
	// (protoregistry.GlobalFiles unless WithFiles), usually a typo.
	ErrUnknownMethod = errors.New("interceptor: unknown method")
	// ErrBadField: a {req...} placeholder names a field the request message
	// does not have, or one that cannot name a lock: repeated, map, message
	// or floating-point.
	ErrBadField = errors.New("interceptor: bad request field")
	// ErrReqInStream: a rule for a streaming method uses {req...}. The lock is
	// taken before the handler reads the first message, so only md, method and
	// application sources are available.
	ErrReqInStream = errors.New("interceptor: request field in a stream rule")
	// ErrBadSource: a placeholder path a source cannot serve ({md.Bad Key},
	// {method.x}, an unknown ContextSource path), or a WithSource call that
	// redefines a built-in source or passes nil.
	ErrBadSource = errors.New("interceptor: bad source")
	// ErrBadOption: an option that cannot be honoured, such as WithFailOpen
	// naming a method without a rule.
	ErrBadOption = errors.New("interceptor: bad option")
)

// RuleError describes a rule that cannot be used. New returns it (joined
// with the others when several rules are wrong); UnaryServerInterceptor and
// StreamServerInterceptor panic with it.
type RuleError struct {
	Method string // full method name, "/shop.v1.Inventory/Reserve"
	Origin string // "Rules" or "proto option (locktag.v1.lock) in <file>.proto"
	Tag    string // the tag as given (for a proto option, as built from it)
	// Err wraps the cause: a *keyexpr.TagError (with the field and byte
	// position in Tag) or one of this package's sentinel errors.
	Err error
}

// Error returns "interceptor: rule for <method> (<origin>): <cause>".
func (e *RuleError) Error() string {
	return "interceptor: rule for " + e.Method + " (" + e.Origin + "): " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *RuleError) Unwrap() error { return e.Err }

// rule is one compiled method rule.
type rule struct {
	method   string
	name     string // Spec.Name, or the full method
	key      *keyexpr.Key[*Call]
	params   locker.Params
	failOpen bool
}

// ruleSource is a tag and where it came from.
type ruleSource struct {
	tag    string
	origin string
}

const originRules = "Rules"

// compile builds the method rules of an Interceptor: proto options first,
// then Go rules over them. Errors are sorted by method and joined.
func compile(rules Rules, o *options) (unary, stream map[string]*rule, err error) {
	errs := slices.Clone(o.errs)
	tags := map[string]ruleSource{}
	if o.protoOptions {
		for method, rs := range protoRules(o.files) {
			tags[method] = rs
		}
	}
	for method, tag := range rules {
		if tag == "" {
			delete(tags, method)
			if _, err := findMethod(o.files, method); err != nil {
				errs = append(errs, &RuleError{Method: method, Origin: originRules, Err: err})
			}
			continue
		}
		tags[method] = ruleSource{tag: tag, origin: originRules}
	}
	unary, stream = map[string]*rule{}, map[string]*rule{}
	methods := make([]string, 0, len(tags))
	for method := range tags {
		methods = append(methods, method)
	}
	slices.Sort(methods)
	for _, method := range methods {
		rs := tags[method]
		r, streaming, err := compileRule(method, rs.tag, o)
		if err != nil {
			errs = append(errs, &RuleError{Method: method, Origin: rs.origin, Tag: rs.tag, Err: err})
			continue
		}
		if streaming {
			stream[method] = r
		} else {
			unary[method] = r
		}
	}
	for _, method := range o.failOpenMethods {
		if r := unary[method]; r != nil {
			r.failOpen = true
		} else if r := stream[method]; r != nil {
			r.failOpen = true
		} else {
			errs = append(errs, fmt.Errorf("%w: WithFailOpen(%q): the method has no lock rule", ErrBadOption, method))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return unary, stream, nil
}

// compileRule parses and binds one tag for method.
func compileRule(method, tag string, o *options) (*rule, bool, error) {
	md, err := findMethod(o.files, method)
	if err != nil {
		return nil, false, err
	}
	spec, err := keyexpr.ParseTag(tag)
	if err != nil {
		return nil, false, err
	}
	m := methodInfo{fullMethod: method, desc: md, streaming: isStreaming(md)}
	var bopts []keyexpr.BindOption
	if o.maxValueLen != 0 {
		bopts = append(bopts, keyexpr.WithMaxValueLen(o.maxValueLen))
	}
	key, err := keyexpr.BindSpec(spec, sourcesFor(m, o.sources), bopts...)
	if err != nil {
		return nil, false, err
	}
	name := spec.Name
	if name == "" {
		name = method
	}
	r := &rule{
		method:   method,
		name:     name,
		key:      key,
		params:   locker.Params{TTL: spec.Expire, Wait: spec.Wait, Name: name, Template: spec.Key.String()},
		failOpen: o.failOpenAll,
	}
	return r, m.streaming, nil
}

// findMethod looks a full method name up in files.
func findMethod(files *protoregistry.Files, method string) (protoreflect.MethodDescriptor, error) {
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
				out[method] = ruleSource{
					tag:    ruleTag(lr),
					origin: "proto option (locktag.v1.lock) in " + fd.Path(),
				}
			}
		}
		return true
	})
	return out
}

// ruleTag writes a LockRule as the equivalent tag; empty fields are left
// out, except key, which is required.
func ruleTag(lr *locktagv1.LockRule) string {
	var b strings.Builder
	add := func(field, value string) {
		if value == "" && field != "key" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(field)
		b.WriteByte(':')
		b.WriteString(strconv.Quote(value))
	}
	add("key", lr.GetKey())
	add("expire", lr.GetExpire())
	add("wait", lr.GetWait())
	add("name", lr.GetName())
	add("long", lr.GetLong())
	return b.String()
}
