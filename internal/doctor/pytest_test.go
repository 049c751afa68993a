package doctor

import "testing"

func TestPytestCall(t *testing.T) {
	for _, tc := range []struct{ run, want string }{
		{"python3 -m pytest", "python3"},
		{"PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -p no:cacheprovider", "python3"},
		{"cd sub && /opt/py/bin/python3.12 -m  pytest -q", "/opt/py/bin/python3.12"},
		{"export X=1\npython -m pytest", "python"},
		{"python3 -m pytest_cov", ""},
		{"pytest -q", ""},
		{"python3 -m unittest", ""},
		{"go test ./...", ""},
	} {
		got := ""
		if m := pytestCall.FindStringSubmatch(tc.run); m != nil {
			got = m[1]
		}
		if got != tc.want {
			t.Errorf("%q: interpreter %q, want %q", tc.run, got, tc.want)
		}
	}
}
