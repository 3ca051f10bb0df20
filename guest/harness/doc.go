// Package harness defines the adapter a guest uses to drive one kind of AI CLI
// (launch flags, pre-seeded config, native resume, screen cues, message
// delivery, native session store, transcript parsing) and a registry of them.
//
// Only the fake harness (guest/harness/fake) is wired today. The interface is
// shaped for the real CLIs (docs/harnesses.md); each gets a package
// guest/harness/<name> and one line in guest/harness/builtin:
//
//   - claude: Launch adds --session-id <uuid> (PreassignSessionID) or
//     --resume <id>, --model; Launch.Env carries ANTHROPIC_BASE_URL and the
//     DISABLE_* switches; SeedFiles merges ~/.claude.json (onboarding done,
//     approved key suffix, projects[<WorkDir>].hasTrustDialogAccepted) with
//     SeedFile.Merge; Classify: "❯ " prompt idle, "esc to interrupt" busy,
//     permission dialogs waiting; SessionStoreDir is
//     ~/.claude/projects/<WorkDir with / → ->; ParseTranscript reads its JSONL.
//   - codex: cannot pre-assign an id, so Launch leaves SessionID empty and the
//     guest polls DiscoverSession over ~/.codex/sessions/YYYY/MM/DD; resume is
//     "codex resume <id>"; Launch.Env sets CODEX_HOME; SeedFiles writes
//     config.toml; FormatMessage pauses ~0.5 s between the paste and Enter.
//   - gemini / opencode: resume flags --resume / --session, settings files,
//     their own cues; opencode keeps sessions in one SQLite file (SessionFile
//     names it), so its ParseTranscript receives the database bytes and must
//     open them as a database, not scan lines.
//
// Harnesses whose CLI buffers input typed while it works set
// DeliveryPolicy.AcceptsQueuedInput; the guest still never delivers while a
// permission prompt (WAITING_FOR_INPUT) is up.
package harness
