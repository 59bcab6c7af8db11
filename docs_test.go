package xpuscope_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocLinks: every relative link in the repository's Markdown names a
// file or directory of the repository, and none leads out of it.
func TestDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	pages := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		pages++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			to := filepath.Clean(filepath.Join(filepath.Dir(path), target))
			if !assert.False(t, strings.HasPrefix(to, ".."), "%s: %s leads out of the repository", path, m[1]) {
				continue
			}
			_, err := os.Stat(to)
			assert.NoError(t, err, "%s: link %s", path, m[1])
		}
		return nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, pages, 10, "Markdown pages read")
}
