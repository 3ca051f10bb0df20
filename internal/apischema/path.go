package apischema

import "aicli.dev/aicli/apis/v1alpha1"

// APIPath is the path prefix of every aicli.dev/v1alpha1 endpoint, served by
// the API server and used by its clients.
const APIPath = "/apis/" + v1alpha1.Group + "/" + v1alpha1.Version
