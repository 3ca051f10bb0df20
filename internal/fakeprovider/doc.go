// Package fakeprovider is a loopback model-provider server for tests: it speaks
// enough of the Anthropic Messages API, the OpenAI Responses API and the Gemini
// generateContent API (streaming and not) for the real AI CLIs to hold a
// conversation, with scriptable replies, per-token delays, configurable usage
// and a log of every request including the message history it carried.
package fakeprovider
