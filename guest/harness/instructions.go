package harness

import (
	"fmt"
	"strings"
)

// The lines that delimit the standing instructions the guest keeps in a CLI's
// instructions file (Adapter.InstructionsFile). Everything between them is
// rewritten at every launch; everything outside them is the user's or the
// CLI's and is never changed. A line opens the block when it starts with
// InstructionsBeginPrefix, so the wording after it may change between releases.
const (
	InstructionsBeginPrefix = "<!-- BEGIN aicli instructions"
	InstructionsBegin       = InstructionsBeginPrefix + ": written by the aicli guest at every launch from the agent" +
		" (spec.persona); edit the agent, not this block -->"
	InstructionsEnd = "<!-- END aicli instructions -->"
)

// InstructionsUpdate is what to do with a CLI's instructions file.
type InstructionsUpdate struct {
	// Data is the file's new content when Write is set.
	Data []byte
	// Write: replace the file with Data. Remove: delete the file (only the
	// guest's block was in it, and there are no instructions any more).
	// Neither: leave the file as it is (nothing to change).
	Write, Remove bool
	// Foreign: the file holds text outside the guest's block (a user's or the
	// CLI's own notes), which the update keeps as it is.
	Foreign bool
}

// MergeInstructions computes the instructions file for text (empty: none)
// from its current content (nil when there is no file). The file ends up
// holding the existing text outside the guest's block unchanged and, when
// text is not empty, one block with text (in place of the old block, else at
// the end). A file whose markers do not form exactly one well-ordered block is
// an error: it is left for the user to repair rather than guessed at.
func MergeInstructions(existing []byte, text string) (InstructionsUpdate, error) {
	before, after, hadBlock, err := splitInstructions(string(existing))
	if err != nil {
		return InstructionsUpdate{}, err
	}
	foreign := strings.TrimSpace(before+after) != ""
	var out string
	switch {
	case strings.TrimSpace(text) == "" && !hadBlock:
		return InstructionsUpdate{Foreign: foreign}, nil
	case strings.TrimSpace(text) == "" && !foreign:
		return InstructionsUpdate{Remove: true}, nil
	case strings.TrimSpace(text) == "" && strings.TrimSpace(after) == "":
		out = trimBlankTail(before)
	case strings.TrimSpace(text) == "":
		out = before + after
	case hadBlock:
		out = before + instructionsBlock(text) + after
	case foreign:
		out = trimBlankTail(string(existing)) + "\n" + instructionsBlock(text)
	default:
		out = instructionsBlock(text)
	}
	if out == string(existing) {
		return InstructionsUpdate{Foreign: foreign}, nil
	}
	return InstructionsUpdate{Data: []byte(out), Write: true, Foreign: foreign}, nil
}

// instructionsBlock is text between the markers, ending in a newline. A line
// of text that would read as a marker is escaped with a backslash, so the
// block always parses back.
func instructionsBlock(text string) string {
	var b strings.Builder
	b.WriteString(InstructionsBegin + "\n")
	for _, l := range strings.SplitAfter(strings.TrimRight(text, "\r\n"), "\n") {
		if isInstructionsMarker(l) {
			b.WriteString(`\`)
		}
		b.WriteString(l)
	}
	b.WriteString("\n" + InstructionsEnd + "\n")
	return b.String()
}

// splitInstructions cuts content around the guest's block (markers included).
func splitInstructions(content string) (before, after string, found bool, err error) {
	lines := strings.SplitAfter(content, "\n")
	begin, end, err := instructionsMarkers(lines)
	if err != nil || begin < 0 {
		return content, "", false, err
	}
	return strings.Join(lines[:begin], ""), strings.Join(lines[end+1:], ""), true, nil
}

// instructionsMarkers finds the begin and end marker lines (-1, -1 when
// neither is there).
func instructionsMarkers(lines []string) (begin, end int, err error) {
	begin, end = -1, -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, InstructionsBeginPrefix):
			if begin >= 0 {
				return -1, -1, fmt.Errorf("a second %q line (line %d)", InstructionsBeginPrefix+" …", i+1)
			}
			begin = i
		case t == InstructionsEnd:
			if end >= 0 || begin < 0 {
				return -1, -1, fmt.Errorf("an unmatched %q line (line %d)", InstructionsEnd, i+1)
			}
			end = i
		}
	}
	if begin >= 0 && end < 0 {
		return -1, -1, fmt.Errorf("%q (line %d) is never closed by %q", InstructionsBeginPrefix+" …", begin+1,
			InstructionsEnd)
	}
	return begin, end, nil
}

func isInstructionsMarker(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, InstructionsBeginPrefix) || t == InstructionsEnd
}

// trimBlankTail drops trailing blank lines, keeping one final newline.
func trimBlankTail(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if s == "" {
		return ""
	}
	return s + "\n"
}
