// Command aictl is a client that links the server.
package main

import (
	"example.com/bad/internal/cache"
	"example.com/bad/internal/client"
	"example.com/bad/internal/metrics"
)

func main() { client.Use(); metrics.Use(); cache.Use() }
