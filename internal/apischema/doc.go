// Package apischema knows the aicli.dev resources: their names, print columns
// and OpenAPI schemas, read from the generated CRDs, and turns request bodies
// into validated, defaulted objects with errors that name the offending field.
package apischema
