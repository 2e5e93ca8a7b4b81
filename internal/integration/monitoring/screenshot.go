package monitoring

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FindChromium returns the path of a Chromium on PATH, or "".
func FindChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Screenshot opens the local file page in headless Chromium with a fresh
// profile and nothing to reach but that file, and writes a PNG of
// width×height pixels to png.
func Screenshot(ctx context.Context, chromium, page, png string, width, height int) error {
	page, err := filepath.Abs(page)
	if err != nil {
		return err
	}
	png, err = filepath.Abs(png)
	if err != nil {
		return err
	}
	profile, err := os.MkdirTemp("", "dashshot-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--hide-scrollbars",
		"--user-data-dir="+profile,
		"--screenshot="+png,
		fmt.Sprintf("--window-size=%d,%d", width, height),
		"file://"+page)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", chromium, err, strings.TrimSpace(string(out)))
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		return fmt.Errorf("%s wrote no screenshot: %s", chromium, strings.TrimSpace(string(out)))
	}
	return nil
}
