// Package web holds the consoles' templates, stylesheet and front-end bundle,
// embedded in aicli-console. The bundle (dist/) is built from src/ and the
// npm packages pinned in package-lock.json by `make console-web`; a binary
// built without it serves the pages with a notice that live views are off.
package web

import (
	"embed"
	"io/fs"
)

//go:embed templates static dist
var files embed.FS

// Templates are the html/template sources.
func Templates() fs.FS { return sub("templates") }

// Static is the hand-written stylesheet and images.
func Static() fs.FS { return sub("static") }

// Dist is the built bundle (console.js, console.css).
func Dist() fs.FS { return sub("dist") }

// BundleBuilt reports whether dist/ holds the built bundle.
func BundleBuilt() bool {
	_, err := fs.Stat(files, "dist/console.js")
	return err == nil
}

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err)
	}
	return f
}
