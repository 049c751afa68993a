package xmlscan

import "github.com/runmill/verify/pkg/report/internal/textcap"

// Attrs holds the attributes of the element being started that the
// handler reads, one textcap.Field each, indexed as Config.Attr numbers them.
type Attrs struct {
	F    []textcap.Field
	used []int // ids of the fields set since the last reset
}

// NewAttrs makes room for n attributes of at most max kept bytes each.
func NewAttrs(n, max int) Attrs {
	a := Attrs{F: make([]textcap.Field, n)}
	for i := range a.F {
		a.F[i].Max = max
	}
	return a
}

// Get returns attribute id, or nil when the element does not have it.
func (a *Attrs) Get(id int) *textcap.Field {
	if f := &a.F[id]; f.Set {
		return f
	}
	return nil
}

// set marks attribute id present and returns its field.
func (a *Attrs) set(id int) *textcap.Field {
	f := &a.F[id]
	f.Set = true
	a.used = append(a.used, id)
	return f
}

// reset empties the fields set since the last reset, for the next element:
// most elements have a few of the attributes a handler reads.
func (a *Attrs) reset() {
	for _, id := range a.used {
		a.F[id].Reset()
	}
	a.used = a.used[:0]
}
