//go:build e2e

package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Supervisor info", Label("supervisor-info"), func() {
	It("reports identity, a live conversation's container sample and the guest images", func(ctx SpecContext) {
		sup := startSpecSupervisor(ctx, GinkgoT().TempDir())
		sup.apply(ctx, fakeAgent("gauge"))
		conv := sup.start(ctx, "gauge")
		sup.waitState(ctx, conv, "Active", "IDLE", 2*time.Minute)
		Expect(sup.send(ctx, conv, "measure me")).To(Succeed())
		sup.waitReply(ctx, conv, "fake[turn 1]: measure me")

		info, err := sup.client.Info(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.SupervisorID).To(Equal(sup.id))
		Expect(info.Version).NotTo(BeEmpty())
		Expect(info.Ready).To(BeTrue())
		Expect(info.UptimeSeconds).To(BeNumerically(">=", 0))
		Expect(info.Capacity.LiveConversations).To(Equal(1))
		Expect(info.Capacity.StatsError).To(BeEmpty())
		Expect(info.Capacity.Containers).To(HaveLen(1))
		c := info.Capacity.Containers[0]
		Expect(c.Conversation).To(Equal(conv))
		Expect(c.Agent).To(Equal("gauge"))
		Expect(c.MemoryBytes).To(BeNumerically(">", 0))
		Expect(c.CPUPercent).To(BeNumerically(">", 0))
		Expect(info.Capacity.Disk).NotTo(BeNil())
		Expect(info.Capacity.Disk.Error).To(BeEmpty())
		Expect(info.Capacity.Disk.ImagesBytes).To(BeNumerically(">", 0))
		harnesses := []string{}
		for _, img := range info.Capacity.Disk.Images {
			harnesses = append(harnesses, img.Harness)
		}
		Expect(harnesses).To(ContainElement("fake"))

		last, err := sup.client.TranscriptBefore(ctx, "default", conv, 0, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(last.Items).To(HaveLen(1))
		Expect(last.Items[0].Text).To(ContainSubstring("fake[turn 1]: measure me"))

		sup.setDesired(ctx, conv, "Paused")
		sup.waitState(ctx, conv, "Paused", "", time.Minute)
		info, err = sup.client.Info(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Capacity.LiveConversations).To(Equal(0))
	}, SpecTimeout(5*time.Minute))
})
