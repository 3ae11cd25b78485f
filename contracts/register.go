package contracts

import . "github.com/onsi/ginkgo/v2"

// Register defines the fourteen contracts' specs for cfg. Call it once, before RunSpecs. One
// top-level container keeps the canon's order (Ginkgo shuffles only top-level containers).
func Register(cfg *Config) bool {
	return Describe("EchoMQ conformance", func() {
		c01(cfg)
		c02(cfg)
		c03(cfg)
		c04(cfg)
		c05(cfg)
		c06(cfg)
		c07(cfg)
		c08(cfg)
		c09(cfg)
		c10(cfg)
		c11(cfg)
		c12(cfg)
		c13(cfg)
		c14(cfg)
	})
}
