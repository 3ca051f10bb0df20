package pricing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"aicli.dev/aicli/internal/spend"
)

// maxModelsBody bounds the models list we accept.
const maxModelsBody = 64 << 20

type modelsList struct {
	Data []struct {
		ID        string        `json:"id"`
		Pricing   priceFields   `json:"pricing"`
		Overrides []priceFields `json:"overrides"`
	} `json:"data"`
}

type priceFields struct {
	MinPromptTokens int64           `json:"min_prompt_tokens"`
	Prompt          json.RawMessage `json:"prompt"`
	Completion      json.RawMessage `json:"completion"`
	CacheRead       json.RawMessage `json:"input_cache_read"`
	CacheWrite      json.RawMessage `json:"input_cache_write"`
	CacheWrite1h    json.RawMessage `json:"input_cache_write_1h"`
	Overrides       []priceFields   `json:"overrides"`
}

// price decodes a USD-per-token value written as a string (or a number); missing, unparsable or negative values
// are absent.
func price(v json.RawMessage) (float64, bool) {
	if len(v) == 0 || string(v) == "null" {
		return 0, false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return f, true
}

func (p priceFields) rates(anthropic bool) (spend.Rates, bool) {
	in, okIn := price(p.Prompt)
	out, okOut := price(p.Completion)
	if !okIn || !okOut {
		return spend.Rates{}, false
	}
	r := spend.Rates{Input: in, Output: out}
	r.CacheRead, _ = price(p.CacheRead)
	r.CacheWrite5m, _ = price(p.CacheWrite)
	if w1, ok := price(p.CacheWrite1h); ok {
		r.CacheWrite1h = w1
	} else if anthropic {
		r.CacheWrite1h = 2 * in
	}
	return r, true
}

// ParseModels turns an OpenRouter-style models list into a Table; ":free"/":batch" variants and entries with
// negative or missing prompt/completion prices are ignored.
func ParseModels(body []byte) (Table, error) {
	var l modelsList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("pricing: decode models list: %w", err)
	}
	t := Table{}
	for _, m := range l.Data {
		id := strings.ToLower(m.ID)
		if id == "" || strings.Contains(id, ":") {
			continue
		}
		anthropic := strings.HasPrefix(id, "anthropic/")
		r, ok := m.Pricing.rates(anthropic)
		if !ok {
			continue
		}
		for _, o := range append(append([]priceFields{}, m.Pricing.Overrides...), m.Overrides...) {
			if o.MinPromptTokens <= 0 {
				continue
			}
			lr, ok := o.rates(anthropic)
			if !ok {
				continue
			}
			// An override lists only what changes; unlisted buckets keep the base rate.
			if _, has := price(o.CacheRead); !has {
				lr.CacheRead = r.CacheRead
			}
			if _, has := price(o.CacheWrite); !has {
				lr.CacheWrite5m = r.CacheWrite5m
			}
			if _, has := price(o.CacheWrite1h); !has && !anthropic {
				lr.CacheWrite1h = r.CacheWrite1h
			}
			r.Long = &lr
		}
		t[id] = r
	}
	if len(t) == 0 {
		return nil, errors.New("pricing: models list has no usable prices")
	}
	return t, nil
}

// fetch GETs the models list.
func fetch(ctx context.Context, client *http.Client, url string) (Table, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("pricing: build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("pricing: fetch models list: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("pricing: fetch models list: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody))
	if err != nil {
		return nil, fmt.Errorf("pricing: read models list: %w", err)
	}
	return ParseModels(body)
}
