// Command aicli-console is a bad console: it reaches the server through a bad client.
package main

import _ "example.com/bad/internal/client"

func main() {}
