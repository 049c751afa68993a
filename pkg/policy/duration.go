package policy

import (
	"encoding/json"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxTimeout bounds any duration a policy may set: a check that needs more
// than a day is a configuration mistake, not a test.
const MaxTimeout = 24 * time.Hour

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!int" || n.Tag == "!!float" {
		return fmt.Errorf("line %d: expected a duration string such as \"90s\" or \"10m\" (a bare number has no unit)", n.Line)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration such as \"90s\" or \"10m\"", n.Line, n.Value)
	}
	if v <= 0 || v > MaxTimeout {
		return fmt.Errorf("line %d: duration %q must be positive and at most %s", n.Line, n.Value, MaxTimeout)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// IsZero lets omitempty drop an unset duration.
func (d Duration) IsZero() bool { return d == 0 }
