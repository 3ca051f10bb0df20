// Package recallwire holds the shapes of the recall-bucket endpoints, shared
// by the server (recallapi) and its clients (aictl) without pulling the
// server or bleve into them.
package recallwire
