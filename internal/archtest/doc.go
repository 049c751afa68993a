// Package archtest holds the project's import rules as tests (DESIGN.md,
// issue 18): pkg/ never imports internal/, plumbing never imports the
// domain, and the offline verifier imports no network package. It has no
// code of its own.
package archtest
