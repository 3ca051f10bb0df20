// Package historywire holds the wire shapes of transcript history search,
// shared by the server (history, historyapi) and its clients (aictl) without
// pulling the index into them.
package historywire

import (
	"fmt"
	"time"
)

// SubHistory is the agents subresource serving history search:
// GET …/namespaces/{ns}/agents/{name}/historysearch?q=&speaker=&since=&conversation=&limit=.
// (…/{name}/history is every object's own event history.)
const SubHistory = "historysearch"

// Limits of one search.
const (
	DefaultLimit = 20
	MaxLimit     = 200
)

// Hit is one committed transcript entry matching a search. Conversation and
// Cursor locate it: `aictl transcript CONVERSATION --from CURSOR`.
type Hit struct {
	Namespace       string `json:"namespace"`
	Agent           string `json:"agent"`
	Conversation    string `json:"conversation"`
	ConversationUID string `json:"conversationUID"`
	// Cursor is the entry's position in its conversation's transcript.
	Cursor int64 `json:"cursor"`
	// Speaker is human, agent, tool, unattributed, mail:<agent> or injected:<monitor>.
	Speaker string    `json:"speaker"`
	Time    time.Time `json:"time"`
	// Snippet is about 200 bytes of the entry around the first query word,
	// marked **like this**, or the entry's start.
	Snippet string `json:"snippet"`
	// Score is the BM25 relevance (0 when the search had no query text);
	// only its order within one page means anything.
	Score float64 `json:"score,omitempty"`
}

// Page is one search result: best first when the search had query text,
// newest first otherwise.
type Page struct {
	Items []Hit `json:"items"`
}

// ParseSince reads a --since value: a duration before now ("2h", "30m") or
// an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: want a positive duration", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q: want a duration (e.g. 2h, 30m) or an RFC 3339 time (e.g. 2026-12-01T10:00:00Z)", s)
	}
	return t, nil
}
