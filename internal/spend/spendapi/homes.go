package spendapi

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"aicli.dev/aicli/internal/spend"
)

func listHomes(dataDir string) ([]spend.AgentHome, error) {
	root := filepath.Join(dataDir, "agents")
	nss, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("spendapi: read %s: %w", root, err)
	}
	var out []spend.AgentHome
	for _, ns := range nss {
		if !ns.IsDir() {
			continue
		}
		agents, err := os.ReadDir(filepath.Join(root, ns.Name()))
		if err != nil {
			return nil, fmt.Errorf("spendapi: read namespace %s: %w", ns.Name(), err)
		}
		for _, a := range agents {
			home := filepath.Join(root, ns.Name(), a.Name(), "home")
			if fi, err := os.Stat(home); err == nil && fi.IsDir() {
				out = append(out, spend.AgentHome{Namespace: ns.Name(), Name: a.Name(), Home: home})
			}
		}
	}
	return out, nil
}
