package egresswire

// Default loopback addresses of the two listeners inside the container.
const (
	DefaultProviderAddr = "127.0.0.1:8780"
	DefaultProxyAddr    = "127.0.0.1:3128"
)

// CLIEnv returns the environment that points a CLI's HTTP clients at the forward proxy at proxyAddr ("host:port",
// normally DefaultProxyAddr; both upper and lower case, as tools disagree) and keeps loopback — where the provider
// port listens — off the proxy. The supervisor puts it in the CLI's StartRequest.Env.
func CLIEnv(proxyAddr string) map[string]string {
	u := "http://" + proxyAddr
	const noProxy = "127.0.0.1,localhost,::1"
	return map[string]string{
		"HTTPS_PROXY": u, "https_proxy": u,
		"HTTP_PROXY": u, "http_proxy": u,
		"ALL_PROXY": u, "all_proxy": u,
		"NO_PROXY": noProxy, "no_proxy": noProxy,
	}
}

// ProviderURL is the base URL a CLI uses to reach its provider through the provider port at addr ("host:port",
// normally DefaultProviderAddr).
func ProviderURL(addr string) string { return "http://" + addr }
