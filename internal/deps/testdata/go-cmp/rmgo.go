// Package rmgo is a sample module with one third-party dependency.
package rmgo
