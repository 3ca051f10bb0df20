//go:build e2e

package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"aicli.dev/aicli/e2e/framework"
	"aicli.dev/aicli/internal/runtime/docker"

	"github.com/docker/docker/client"
)

// The gate proper runs in BeforeSuite (every spec fails without Docker); these specs document it and prove the
// gate itself can fail.
var _ = Describe("Docker gate", Ordered, Label("gate"), func() {
	It("reaches the Docker daemon", func(ctx SpecContext) {
		Expect(framework.Gate(ctx, suite.Runtime)).To(Succeed())
		v, err := suite.Client.ServerVersion(ctx)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("engine %s, API %s (client negotiated %s)\n", v.Version, v.APIVersion, suite.Client.ClientVersion())
	})

	It("fails with the ensure-docker hint when the daemon is unreachable", func(ctx SpecContext) {
		cli, err := client.NewClientWithOpts(client.WithHost("unix://"+GinkgoT().TempDir()+"/no-docker.sock"),
			client.WithAPIVersionNegotiation())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cli.Close)
		err = framework.Gate(ctx, docker.New(cli, docker.Options{}))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("run hack/ensure-docker.sh"))
	}, SpecTimeout(30*time.Second))
})
