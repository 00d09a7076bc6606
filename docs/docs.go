// Package docs holds Switchboard's documentation pages as Markdown, embedded in the binary:
// the portal serves each at /docs/<name> as HTML and at /docs/<name>.md as Markdown.
package docs

import "embed"

// Pages are the Markdown sources, the file name (without .md) being the page's path, and the
// screenshots they show (served at /docs/screenshots/).
//
//go:embed *.md screenshots/*.png
var Pages embed.FS
