package app

import (
	"fmt"
	"strconv"
	"strings"
)

// ConfigReference renders the settings as the Markdown table of docs/configuration.md: each
// setting's variable, flag, default and usage, generated from settings() so the operator's
// reference cannot drift from the definition (TestConfigReference compares the file with it).
func ConfigReference() string {
	c := Defaults()
	var b strings.Builder
	b.WriteString("| variable | flag | default | meaning |\n|---|---|---|---|\n")
	// Escaped so a table cell stays one cell and "<data dir>" is text, not an HTML tag.
	cell := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")
	for _, s := range c.settings() {
		def := ""
		switch {
		case s.str != nil:
			def = *s.str
		case s.boolean != nil:
			def = strconv.FormatBool(*s.boolean)
		case s.integer != nil:
			def = strconv.Itoa(*s.integer)
		}
		if def == "" {
			def = "(empty)"
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s |\n", s.env, s.flag, cell.Replace(def), cell.Replace(s.usage))
	}
	return b.String()
}

// SettingNames are the environment variables of every setting, in the definition's order.
func SettingNames() []string {
	c := Defaults()
	var names []string
	for _, s := range c.settings() {
		names = append(names, s.env)
	}
	return names
}
