package recall

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// BucketInfo describes one recall bucket of an agent.
type BucketInfo struct {
	Name string
	// Documents is how many documents the bucket holds.
	Documents uint64
}

// Buckets lists the recall buckets of agent in namespace, by name. A bucket
// exists while it holds a document. Names come from the store (a skip scan:
// one seek per bucket); counts from each bucket's index, which is opened
// (and rebuilt if need be) as a search would.
func (r *Recall) Buckets(ctx context.Context, namespace, agent string) ([]BucketInfo, error) {
	if err := checkAgent(namespace, agent); err != nil {
		return nil, err
	}
	prefix := namespace + "/" + agent + "/"
	var out []BucketInfo
	from := ""
	for {
		kvs, err := r.st.ScanKV(ctx, kvBucket, prefix, from, 1)
		if err != nil {
			return nil, fmt.Errorf("recall: list buckets of %s/%s: %w", namespace, agent, err)
		}
		if len(kvs) == 0 {
			// Key order puts "a-c/" before "a/": sort by name.
			slices.SortFunc(out, func(a, b BucketInfo) int { return strings.Compare(a.Name, b.Name) })
			return out, nil
		}
		name, _, ok := strings.Cut(strings.TrimPrefix(kvs[0].Key, prefix), "/")
		if !ok {
			return nil, fmt.Errorf("recall: malformed side-table key %q", kvs[0].Key)
		}
		ref := BucketRef{Namespace: namespace, Agent: agent, Bucket: name}
		b, err := r.bucket(ctx, ref)
		if err != nil {
			return nil, err
		}
		n, err := b.docCount()
		if err != nil {
			return nil, err
		}
		out = append(out, BucketInfo{Name: name, Documents: n})
		// Every key of this bucket starts with "<name>/"; '0' is the byte
		// after '/', so the next bucket's keys start at or after "<name>0".
		from = prefix + name + "0"
	}
}

func (b *bucketIndex) docCount() (uint64, error) {
	idx := b.idx.Load()
	if idx == nil {
		return 0, ErrClosed
	}
	n, err := idx.ix.DocCount()
	if err != nil {
		return 0, fmt.Errorf("recall: count documents of %s: %w", b.ref, err)
	}
	return n, nil
}
