//go:build !cgo || noxla || !((linux && amd64) || darwin)

package backend

import "github.com/gomlx/gomlx/backends"

// xlaBuilt reports whether this binary includes the XLA backend.
const xlaBuilt = false

func startXLA(string) (backends.Backend, string, error) { return nil, "", errNotBuilt }
