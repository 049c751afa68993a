// Package action holds the shell steps of the composite action (action.yml
// at the repository root) and the test that runs them the way the runner
// does. It has no Go code of its own.
package action
