package spend

// SourceFile is one session file a parser discovered.
type SourceFile struct {
	// Path is the file's absolute path.
	Path string
	// Key identifies the file across roots: two files with the same Key are copies, and only the one with the
	// highest Rank (then the larger size) is read.
	Key string
	// Rank orders copies with the same Key (for Codex the active sessions/ copy outranks archived_sessions/).
	Rank int
	// Err, when set, says Path is a directory under a root that could not be listed (see WalkFiles and
	// UnreadableDir): it is reported with the files that could not be read.
	Err error
}

// SessionParser is one harness's session-store reader: it owns root discovery and the file format.
type SessionParser interface {
	// Harness names the CLI.
	Harness() Harness
	// HomeRoots returns the session roots inside an agent's durable home directory.
	HomeRoots(home string) []string
	// Discover lists the session files under roots, and the directories under them that could not be listed,
	// listing directories only with readDir (WalkFiles does); missing roots are not an error.
	Discover(roots []string, readDir ReadDirFunc) ([]SourceFile, error)
	// NewFile starts reading one file, resuming from state a previous FileParser returned (nil: from the start).
	NewFile(path string, state []byte) (FileParser, error)
}

// FileParser consumes one file's complete lines in order.
type FileParser interface {
	// Line handles one complete line without its newline; it reports false when the line cannot be parsed.
	Line(line []byte, emit func(Event)) bool
	// State returns what a later NewFile needs to resume after the last line handled.
	State() []byte
}

// QuotaReporter is implemented by FileParsers that observe live quota.
type QuotaReporter interface {
	// Quota returns the newest snapshot seen in the file so far, or nil.
	Quota() *Quota
}

// CrossFileDeduplicator is implemented by parsers whose events carry identities shared across files (Event.Dedup).
// When one of their files shrinks, is replaced or vanishes, the index rebuilds all of that harness's files, since
// the lost copy may have hidden another.
type CrossFileDeduplicator interface {
	// DedupsAcrossFiles reports whether events are deduplicated across files.
	DedupsAcrossFiles() bool
}
