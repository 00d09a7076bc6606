package wallets

import "fmt"

// UnknownKeyError is a sealed key whose master key this process was not given: typically a
// replica started with a master key of its own instead of the first replica's.
type UnknownKeyError struct{ KeyID string }

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("master key %s is not configured", e.KeyID)
}
