package history

import (
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"
)

// mappingVersion names the index directory; bump it whenever newMapping or
// indexDoc changes so an existing index is rebuilt rather than misread.
const mappingVersion = "index-v1"

// Index field names. text is also the default field of the query syntax.
const (
	fieldText    = "text"
	fieldAgent   = "agent"
	fieldConv    = "conv"
	fieldSpeaker = "speaker"
	fieldTime    = "time"
)

// indexDoc is what is indexed for one transcript entry.
type indexDoc struct {
	Text    string    `json:"text"`
	Agent   string    `json:"agent"` // "<namespace>/<agent>"
	Conv    string    `json:"conv"`  // "<namespace>/<agent>/<conversation>"
	Speaker string    `json:"speaker"`
	Time    time.Time `json:"time"`
}

// newMapping analyses text in English with positions (phrases) and nothing
// stored; agent and conv are exact and stored (a hit's names); speaker is
// exact; time has doc values for newest-first order. Only text is in the
// default field, so a bare query word never matches an agent's name.
func newMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = false
	text.IncludeTermVectors = true
	text.DocValues = false
	text.IncludeInAll = false // text is the default field: no _all copy
	keyword := func(store bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store = store
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	when := bleve.NewDateTimeFieldMapping()
	when.Store = false
	when.IncludeInAll = false
	when.DocValues = true

	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldText, text)
	dm.AddFieldMappingsAt(fieldAgent, keyword(true))
	dm.AddFieldMappingsAt(fieldConv, keyword(true))
	dm.AddFieldMappingsAt(fieldSpeaker, keyword(false))
	dm.AddFieldMappingsAt(fieldTime, when)

	im := bleve.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.DefaultField = fieldText
	im.ScoringModel = index.BM25Scoring
	return im
}
