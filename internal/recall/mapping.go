package recall

import (
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/blevesearch/bleve/v2/search/highlight"
	plainFormat "github.com/blevesearch/bleve/v2/search/highlight/format/plain"
	simpleFragmenter "github.com/blevesearch/bleve/v2/search/highlight/fragmenter/simple"
	simpleHighlighter "github.com/blevesearch/bleve/v2/search/highlight/highlighter/simple"
	index "github.com/blevesearch/bleve_index_api"
)

// mappingVersion names the index directory; bump it whenever newMapping
// changes so existing indexes are rebuilt rather than misread.
const mappingVersion = "index-v1"

// Index field names; they are also the field names of the query syntax.
const (
	fieldTitle = "title"
	fieldTags  = "tags"
	fieldBody  = "body"
)

// snippetStyle is the highlighter that makes Hit.Snippet: plain text, the
// matched terms in **bold** markers, fragments of about 200 bytes.
const snippetStyle = "aicli-recall-snippet"

func init() {
	registry.RegisterHighlighter(snippetStyle, func(map[string]interface{}, *registry.Cache) (highlight.Highlighter, error) {
		return simpleHighlighter.NewHighlighter(
			simpleFragmenter.NewFragmenter(200),
			plainFormat.NewFragmentFormatter("**", "**"),
			" … "), nil
	})
}

// indexDoc is what is indexed for a Doc; the ID is the bleve document ID.
type indexDoc struct {
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
	Body  string   `json:"body"`
}

func newMapping() mapping.IndexMapping {
	text := func(store, vectors bool) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = en.AnalyzerName
		f.Store = store
		f.IncludeTermVectors = vectors
		return f
	}
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldTitle, text(true, false))
	dm.AddFieldMappingsAt(fieldTags, text(false, false))
	dm.AddFieldMappingsAt(fieldBody, text(true, true))

	im := bleve.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.ScoringModel = index.BM25Scoring
	return im
}
