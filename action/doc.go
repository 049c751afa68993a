// Package action holds how runmill is packaged for CI: the shell steps of
// the composite action (action.yml at the repository root), a test that
// runs them the way the runner does, and the tests of the Dockerfile. It
// has no Go code of its own.
package action
