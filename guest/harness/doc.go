// Package harness defines the adapter a guest uses to drive one kind of AI CLI
// (launch flags, pre-seeded config, native resume, screen cues, message
// delivery, native session store, transcript parsing) and a registry of them.
package harness
