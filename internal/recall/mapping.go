package recall

import (
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"
)

// mappingVersion names the index directory; bump it whenever newMapping
// changes so existing indexes are rebuilt rather than misread.
const mappingVersion = "index-v2"

// Index field names; they are also the field names of the query syntax.
const (
	fieldTitle = "title"
	fieldTags  = "tags"
	fieldBody  = "body"
)

// indexDoc is what is indexed for a Doc; the ID is the bleve document ID.
type indexDoc struct {
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
	Body  string   `json:"body"`
}

// newMapping indexes title, tags and body without storing them or doc
// values (Search reads titles and snippets from the store), which roughly
// doubles indexing rate; term vectors stay on title and body for phrases.
func newMapping(t tuning) mapping.IndexMapping {
	analyzer := analyzerName
	if t.unicodeTokenizer {
		analyzer = en.AnalyzerName
	}
	text := func(store, vectors bool) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = analyzer
		f.Store = store
		f.IncludeTermVectors = vectors
		f.DocValues = false // no sorting or faceting on these fields
		f.IncludeInAll = t.withAll
		return f
	}
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldTitle, text(false, true))
	dm.AddFieldMappingsAt(fieldTags, text(false, false))
	dm.AddFieldMappingsAt(fieldBody, text(false, true)) // positions: phrase queries
	if !t.withAll {
		dm.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping()) // no composite field at all
	}

	im := bleve.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = analyzer
	im.ScoringModel = index.BM25Scoring
	return im
}
