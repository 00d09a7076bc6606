// Package sdk holds the client packages' READMEs, embedded in the binary: the documentation
// links them (docs/sdks.md), and the portal serves each at /sdk/<package>/README.md, the
// address the link has both on GitHub and when served.
package sdk

import "embed"

// READMEs are the packages' READMEs, by their path in the repository under sdk/.
//
//go:embed typescript/README.md go/switchboard/README.md partner-node/README.md
var READMEs embed.FS
