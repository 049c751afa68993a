package rmerr

// Codes of Freshness (spec/verification.md § 3): the fresh checkout of a
// commit and the digest of its tree. docs/errors.md lists each with cause and
// fix.
const (
	// CheckoutCreate: a fresh checkout of the commit could not be created
	// (git failed, objects are missing, the state directory is unusable).
	CheckoutCreate Code = "RM-CHECKOUT-001"
	// CheckoutRemove: a checkout, or a leftover of a crashed run, could not be
	// removed; it must not be reused and the run cannot claim its cleanup.
	CheckoutRemove Code = "RM-CHECKOUT-002"

	// TreeSpecialFile: the tree holds a FIFO, socket or device, which has no
	// content to hash; it is rejected rather than skipped.
	TreeSpecialFile Code = "RM-TREE-001"
	// TreeUnreadable: the tree could not be walked or read, or it changed
	// while it was being hashed.
	TreeUnreadable Code = "RM-TREE-002"
)
