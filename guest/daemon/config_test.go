package daemon

import "testing"

func TestConfigFromEnvMirrorOutput(t *testing.T) {
	for _, c := range []struct {
		val     string
		want    bool
		wantErr bool
	}{{"", false, false}, {"0", false, false}, {"1", true, false}, {"yes", false, true}} {
		t.Setenv(EnvMirrorOutput, c.val)
		cfg, err := ConfigFromEnv()
		if (err != nil) != c.wantErr || (err == nil && cfg.MirrorSupervised != c.want) {
			t.Errorf("%s=%q: mirror %v, err %v", EnvMirrorOutput, c.val, cfg.MirrorSupervised, err)
		}
	}
}
