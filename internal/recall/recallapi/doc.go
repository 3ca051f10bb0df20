// Package recallapi serves an agent's recall buckets to the namespace's
// owner: create, list, read and delete documents, search a bucket, list the
// agent's buckets (recallwire names the endpoints). Agents reach their
// buckets through the built-in remember and recall tools instead, limited by
// their Grants; the owner's API is not.
package recallapi
