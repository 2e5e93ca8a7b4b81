package locker

import "github.com/locktag/locktag/locker/internal/protocol"

// MaxLabel is the longest holder label stored with a lock, in bytes
// (WithLabel and Params.Label together): a label cannot blow up Redis. A
// longer Params.Label is cut; a longer WithLabel is refused.
const MaxLabel = protocol.MaxLabel

// labelArg is the label argument of a hold with p: nil when there is no
// label (nothing is sent or stored), WithLabel's boxed once when p has
// none.
func (l *Locker) labelArg(p Params) any {
	if p.Label == "" {
		return l.lockerLabel
	}
	return protocol.Label(l.o.label, p.Label)
}
