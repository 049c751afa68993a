package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runmill/verify/pkg/evidence"
)

// record is the fifth stage: the run's statement — a delivery statement, or
// a shard's — and its signed bundle when a key is given. It returns the
// statement's digest once the checkouts are gone too.
func (v *verification) record() (string, error) {
	v.run.Delivery.IssuedAt = v.o.Now().UTC().Format(time.RFC3339Nano)
	var digest string
	var err error
	if v.o.Shard != nil {
		digest, err = writeShardEvidence(v.run, &v.o, v.share)
	} else {
		digest, err = writeEvidence(v.run, v.o.SigningKey)
	}
	if cerr := v.closed.wait(); err == nil {
		err = cerr
	}
	return digest, err
}

// writeEvidence writes the delivery statement (and its bundle when a key is
// given) into the run directory.
func writeEvidence(run *Run, key *evidence.SigningKey) (string, error) {
	st := evidence.NewDeliveryStatement(run.Delivery)
	payload, err := evidence.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encoding the statement: %w", err)
	}
	run.StatementPath = filepath.Join(run.Dir, "statement.json")
	if err := os.WriteFile(run.StatementPath, payload, 0o644); err != nil {
		return "", err
	}
	if key != nil {
		b, _, err := evidence.Sign(st, key)
		if err != nil {
			return "", fmt.Errorf("signing the statement: %w", err)
		}
		run.BundlePath = filepath.Join(run.Dir, "evidence.json")
		if err := os.WriteFile(run.BundlePath, b, 0o644); err != nil {
			return "", err
		}
	}
	return evidence.Digest(payload), nil
}
