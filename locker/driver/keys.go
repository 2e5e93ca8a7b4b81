package driver

// Keys are the Redis keys of a script call. Each name is also kept as an
// interface value, boxed once by NewKeys: drivers that pass a command as
// []any (redigo) append those instead of boxing every key on every call,
// and a lock's several calls share one Keys. The zero value has no keys.
type Keys struct {
	names []string
	args  []any
}

// NewKeys returns the Keys names. It keeps names: do not modify it later.
func NewKeys(names ...string) Keys {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return Keys{names: names, args: args}
}

// KeysIn returns the Keys names, boxing them into args (len(args) >=
// len(names)): where the caller already has storage for both — a
// lock holder embeds it in its lease — the Keys cost no allocation of their
// own beyond the boxes. It keeps names and args: do not modify them later.
func KeysIn(args []any, names []string) Keys {
	args = args[:len(names)]
	for i, n := range names {
		args[i] = n
	}
	return Keys{names: names, args: args}
}

// Len is the number of keys.
func (k Keys) Len() int { return len(k.names) }

// Names are the keys as strings. Do not modify the slice.
func (k Keys) Names() []string { return k.names }

// Args are the keys as interface values (each holds a string), for a
// command's argument list. Do not modify the slice.
func (k Keys) Args() []any { return k.args }

// First returns the first n keys (n <= Len); it allocates nothing.
func (k Keys) First(n int) Keys { return Keys{names: k.names[:n], args: k.args[:n]} }
